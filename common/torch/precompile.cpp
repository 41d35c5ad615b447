#include "torch/precompile.h"

#include <chrono>
#include <cstdio>
#include <memory>
#include <vector>

#include "torch/task_check.h"
#include "util/json_field.h"
#include "util/log.h"
#include "util/signals.h"

namespace ca {
namespace {

struct LoadedTask {
  std::string where;  // file:line
  std::string id;
  std::unique_ptr<TaskProgram> program;
};

}  // namespace

PrecompileSummary precompile_tasks(const std::string& tasks_path, const at::Device& device,
                                   const CompiledOptions& options, unsigned jobs, OnBadRecord on_bad) {
  auto started = std::chrono::steady_clock::now();
  PrecompileSummary summary;
  std::vector<LoadedTask> tasks;
  summary.code = visit_records(
      {tasks_path}, on_bad,
      [&](const Record& record) -> std::expected<std::optional<ExitCode>, std::string> {
        auto id = string_field(record.value, "id", "");
        if (!id) return std::unexpected(id.error());
        auto program = load_task_program(record.value);
        if (!program) return std::unexpected("task '" + *id + "': " + program.error());
        tasks.push_back({record.where(), *id, std::make_unique<TaskProgram>(std::move(*program))});
        return std::nullopt;
      },
      &summary.failed);
  if (summary.code != ExitCode::ok && summary.code != ExitCode::some_failed) return summary;

  std::vector<const Program*> programs;
  for (const auto& task : tasks) programs.push_back(&task.program->interpreter.program());
  auto results = compile_missing(programs, device, options, jobs);
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (!results[i]) {
      error(tasks[i].where, "task '" + tasks[i].id + "': " + results[i].error());
      ++summary.failed;
      continue;
    }
    ++(*results[i] == PackageState::compiled ? summary.compiled : summary.cached);
  }
  summary.tasks = summary.compiled + summary.cached + summary.failed;
  summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (summary.failed > 0) summary.code = ExitCode::some_failed;
  if (interrupted()) summary.code = ExitCode::interrupted;
  return summary;
}

std::string summary_line(const PrecompileSummary& summary, const at::Device& device) {
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%.1f", summary.seconds);
  return "precompiled " + std::to_string(summary.tasks) + " tasks for " + device.str() + ": " +
         std::to_string(summary.compiled) + " compiled, " + std::to_string(summary.cached) + " cached, " +
         std::to_string(summary.failed) + " failed in " + seconds + " s";
}

}  // namespace ca
