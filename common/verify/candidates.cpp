#include "verify/candidates.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "sandbox/workspace.h"
#include "util/atomic_file.h"
#include "util/cli.h"
#include "util/json_field.h"
#include "util/log.h"
#include "util/record_loop.h"
#include "util/record_output.h"
#include "util/signals.h"

namespace ca {

std::expected<std::map<std::string, Json>, SideFileError> load_tasks(const std::string& path) {
  auto records = read_side_file(path, [](const Json& record) -> std::expected<void, std::string> {
    if (auto id = string_field(record, "id", ""); !id) return std::unexpected(id.error());
    return {};
  });
  if (!records) return std::unexpected(records.error());
  std::map<std::string, Json> tasks;
  for (auto& record : *records) {
    std::string id = record.value["id"];
    tasks[id] = std::move(record.value);
  }
  return tasks;
}

std::expected<Json, std::string> task_of(const Json& candidate, const std::map<std::string, Json>& tasks) {
  if (auto embedded = candidate.find("task"); embedded != candidate.end() && embedded->is_object()) return *embedded;
  auto id = string_field(candidate, "task_id", "");
  if (!id) return std::unexpected(id.error());
  auto it = tasks.find(*id);
  if (it == tasks.end())
    return std::unexpected("task_id: no task '" + *id + "' (give the tasks with --tasks, or embed a task field)");
  return it->second;
}

std::expected<Json, std::string> workspace_candidate(const std::string& dir, const std::string& backend) {
  namespace fs = std::filesystem;
  auto task_text = read_file((fs::path(dir) / "task.json").string());
  if (!task_text) return std::unexpected(task_text.error() + " (not a workspace? make one with ca-sandbox create)");
  auto task = parse_json(*task_text);
  if (!task) return std::unexpected(dir + "/task.json: " + task.error());
  if (!task->is_object()) return std::unexpected(dir + "/task.json: expected a JSON object");
  Json files = Json::object();
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(fs::path(dir) / "kernels", ec);
       !ec && it != fs::recursive_directory_iterator(); ++it) {
    // The agent writes kernels/; a symlink there could make this trusted
    // process read any file on the host.
    if (it->is_symlink()) return std::unexpected(it->path().string() + ": symbolic links are not allowed in kernels/");
    if (!it->is_regular_file()) continue;
    auto text = read_file(it->path().string());
    if (!text) return std::unexpected(text.error());
    files[fs::relative(it->path(), dir).string()] = *text;
  }
  if (files.empty()) return std::unexpected(dir + "/kernels: no kernel files yet");
  return Json{{"kind", "candidate"},
              {"task_id", task->value("id", "")},
              {"task", *task},
              {"backend", backend},
              {"files", files}};
}

std::expected<std::map<std::string, std::string>, std::string> candidate_files(const Json& candidate) {
  auto files = require_field(candidate, "files", "");
  if (!files) return std::unexpected(files.error());
  if (!(*files)->is_object()) return std::unexpected("files: expected an object of path -> source");
  if ((*files)->empty()) return std::unexpected("files: no kernel files: nothing was written to judge");
  std::map<std::string, std::string> out;
  for (auto it = (*files)->begin(); it != (*files)->end(); ++it) {
    if (!it->is_string()) return std::unexpected(field_path("files", it.key()) + ": expected the file's text");
    out[it.key()] = it->get<std::string>();
  }
  return out;
}

ExitCode judge_records(const std::vector<std::string>& inputs, const std::string& output, const std::string& tasks_path,
                       bool fail_fast, const std::string& field, const Judge& judge, unsigned jobs,
                       const JournalOptions& journal) {
  std::map<std::string, Json> tasks;
  if (!tasks_path.empty()) {
    auto loaded = load_tasks(tasks_path);
    if (!loaded) return report_side_file_error(loaded.error());
    tasks = std::move(*loaded);
  }
  std::vector<std::string> files = inputs.empty() ? std::vector<std::string>{"-"} : inputs;
  return write_journaled_records(output, journal, [&](JsonlWriter& writer, RecordJournal* kept) {
    return transform_records(
        files, writer, fail_fast ? OnBadRecord::stop : OnBadRecord::skip,
        [&](const Json& candidate) -> std::expected<Json, std::string> {
          auto task = task_of(candidate, tasks);
          if (!task) return std::unexpected(task.error());
          auto backend = parse_backend(candidate.value("backend", "cpu"));
          if (!backend) return std::unexpected("backend: expected \"cpu\" or \"cuda\"");
          auto judged = judge(*task, candidate, *backend);
          if (!judged) return std::unexpected(judged.error());
          Json out = candidate;
          out[field] = std::move(*judged);
          return out;
        },
        jobs, kept);
  });
}

WorkspaceJudgement judge_workspace_text(const std::string& dir, const std::string& backend_name, const Judge& judge,
                                        const std::function<std::string(const Json&)>& report) {
  auto backend = parse_backend(backend_name);
  if (!backend) return {ExitCode::usage, "", "--backend: expected cpu or cuda, got '" + backend_name + "'"};
  auto candidate = workspace_candidate(dir, backend_name);
  if (!candidate) return {ExitCode::no_input, "", candidate.error()};
  auto judged = judge((*candidate)["task"], *candidate, *backend);
  if (!judged) {
    // e.g. while waiting for the device lease
    return {interrupted() ? ExitCode::interrupted : ExitCode::data_error, "", judged.error()};
  }
  return {judged->value("ok", false) ? ExitCode::ok : ExitCode::some_failed, report(*judged), ""};
}

ExitCode judge_workspace(const std::string& dir, const std::string& backend_name, const Judge& judge,
                         const std::function<std::string(const Json&)>& report) {
  auto judged = judge_workspace_text(dir, backend_name, judge, report);
  if (judged.code == ExitCode::usage) return usage_error(judged.error);
  if (!judged.error.empty()) error(judged.error);
  std::fputs(judged.report.c_str(), stdout);
  return judged.code;
}

std::string implied_workspace(const std::vector<std::string>& inputs) {
  return inputs.empty() && isatty(STDIN_FILENO) && access("task.json", F_OK) == 0 ? "." : "";
}

std::optional<ExitCode> settle_workspace(const std::vector<std::string>& inputs, std::string& workspace,
                                         std::string& backend, bool backend_given) {
  if (!workspace.empty() && !inputs.empty()) {
    return usage_error("--workspace judges the workspace and reads no records, so '" + inputs.front() +
                       "' would be ignored: give FILE... or --workspace, not both");
  }
  if (workspace.empty()) workspace = implied_workspace(inputs);
  if (workspace.empty()) {
    if (inputs.empty() && isatty(STDIN_FILENO)) {
      note(
          "reading candidate records (JSONL) from standard input, a terminal; end with Ctrl-D. To judge an agent "
          "workspace, run this inside it (a folder with task.json) or give --workspace DIR");
    }
    return std::nullopt;
  }
  if (backend_given) return std::nullopt;
  auto recorded = workspace_backend(workspace);
  if (!recorded) {
    error(recorded.error());
    return ExitCode::data_error;
  }
  if (!recorded->empty()) backend = *recorded;
  return std::nullopt;
}

}  // namespace ca
