#include "crawl/crawl.h"

#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>

#include <ATen/Context.h>

#include "crawl/module_records.h"
#include "torch/op_catalog.h"
#include "torch/task_check.h"
#include "util/cli.h"
#include "util/exceptions.h"
#include "util/log.h"
#include "util/record_output.h"

namespace ca {

ExitCode write_op_records(const std::string& output, bool usable_only, bool summary) {
  std::vector<Json> records = crawl_ops();
  if (usable_only) std::erase_if(records, [](const Json& r) { return !r["usable"].get<bool>(); });
  if (summary) {
    std::fputs(summarize_ops(records).c_str(), stdout);
    return ExitCode::ok;
  }
  return write_records(output, [&](JsonlWriter& writer) {
    for (const auto& record : records) {
      if (auto stop = emit(writer, record)) return *stop;
    }
    return ExitCode::ok;
  });
}

ExitCode write_module_records(const std::vector<std::string>& roots, const std::string& origin,
                              const std::string& output) {
  return write_records(output, [&](JsonlWriter& writer) {
    for (const auto& root : roots) {
      auto found = scan_py_modules(root);
      if (!found) {
        error(found.error());
        return ExitCode::no_input;
      }
      for (const auto& module : *found) {
        if (auto stop = emit(writer, module_record(module, origin.empty() ? root : origin))) return *stop;
      }
    }
    return ExitCode::ok;
  });
}

ExitCode write_checked_tasks(const std::vector<std::string>& inputs, const std::string& output, OnBadRecord on_bad,
                             const JournalOptions& journal) {
  return write_journaled_records(output, journal, [&](JsonlWriter& writer, RecordJournal* kept) {
    return transform_records(
        inputs, writer, on_bad, [](const Json& record) { return check_task(record); }, 1, kept);
  });
}

ExitCode import_kernelbench(KernelbenchImport options, const std::string& output, const std::string& digests_path) {
  if (options.backend == Backend::cuda && !at::hasCUDA()) return usage_error("--device cuda: no CUDA device here");
  for (const auto& dir : options.dirs) {
    if (!std::filesystem::is_directory(dir)) {
      error(dir, "no such directory");
      return ExitCode::no_input;
    }
  }
  if (options.params_dir.empty()) {
    auto parent = std::filesystem::path(output).parent_path();
    options.params_dir = output == "-" || parent.empty() ? "." : parent.string();
  }
  options.digests = !digests_path.empty();
  auto records = run_import_bridge(options);
  if (!records) {
    error(records.error());
    return records.error() == "interrupted" ? ExitCode::interrupted : ExitCode::data_error;
  }
  // Opened once the bridge has run, as the output is: it makes the params folder, the output's by default.
  std::optional<JsonlWriter> digests;
  if (options.digests) {
    auto opened = JsonlWriter::open(digests_path);
    if (!opened) {
      error(digests_path, opened.error());
      return ExitCode::io_error;
    }
    digests.emplace(std::move(*opened));
  }
  std::map<std::string, std::pair<int, int>> per_level;  // "level 1" -> (imported, problems)
  int imported = 0;
  ExitCode code = write_records(output, [&](JsonlWriter& writer) {
    for (const auto& record : *records) {
      auto level =
          record.value("level", Json()).is_number() ? "level " + std::to_string(record["level"].get<int>()) : "other";
      ++per_level[level].second;
      std::expected<ImportedTask, std::string> done =
          record.value("kind", "") == "import_error"
              ? std::unexpected(record.value("error", "import failed"))
              : exception_as_error<ImportedTask>([&] { return finish_import(record, options); });
      Json out = done ? done->task : import_error_record(record, done.error());
      if (done) {
        ++imported;
        ++per_level[level].first;
      } else {
        error(record.value("file", record.value("id", "?")), done.error());
      }
      if (digests && done && digests->write(done->digest) != JsonlWriter::Status::ok) {
        error(digests_path, "writing failed");
        return ExitCode::io_error;
      }
      if (auto stop = emit(writer, out)) return *stop;
    }
    return imported == int(records->size()) ? ExitCode::ok : ExitCode::some_failed;
  });
  if (digests && (code == ExitCode::ok || code == ExitCode::some_failed)) {
    if (auto committed = digests->commit(); !committed) {
      error(digests_path, committed.error());
      return ExitCode::io_error;
    }
  }
  std::string summary = "imported " + std::to_string(imported) + " of " + std::to_string(records->size());
  std::string levels;
  for (const auto& [level, counts] : per_level) {
    levels += (levels.empty() ? "" : ", ") + level + ": " + std::to_string(counts.first) + "/" +
              std::to_string(counts.second);
  }
  note(summary + (levels.empty() ? "" : " (" + levels + ")"));
  return code;
}

}  // namespace ca
