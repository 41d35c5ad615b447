#include "crawl/crawl.h"

#include <condition_variable>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <future>
#include <map>
#include <mutex>
#include <optional>

#include "crawl/module_records.h"
#include "torch/op_catalog.h"
#include "torch/runtime.h"
#include "torch/task_check.h"
#include "util/cli.h"
#include "util/exceptions.h"
#include "util/log.h"
#include "util/record_output.h"
#include "util/sha256.h"
#include "util/signals.h"
#include "util/subprocess.h"

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

namespace {

// The lines of a bridge that runs on a thread of its own, queued as they come, for the records to be finished here,
// on the calling thread, in the bridge's order.
class BridgeLines {
 public:
  explicit BridgeLines(std::vector<std::string> argv)
      : m_run(std::async(std::launch::async, [this, argv = std::move(argv)] {
          SubprocessOptions options;
          options.max_output = size_t(256) << 20;  // one line (a record) at most; stderr's tail
          options.on_output_line = [this](std::string line) {
            std::lock_guard lock(m_mutex);
            m_lines.push_back(std::move(line));
            m_ready.notify_one();
          };
          auto result = run_subprocess(argv, options);
          std::lock_guard lock(m_mutex);
          m_done = true;
          m_ready.notify_one();
          return result;
        })) {}

  /// The next line, or nullopt once the bridge has ended and all its lines were taken.
  std::optional<std::string> next() {
    std::unique_lock lock(m_mutex);
    m_ready.wait(lock, [&] { return !m_lines.empty() || m_done; });
    if (m_lines.empty()) return std::nullopt;
    std::string line = std::move(m_lines.front());
    m_lines.pop_front();
    return line;
  }
  /// How the bridge ended; after next() gave nullopt.
  std::expected<SubprocessResult, std::string> result() { return m_run.get(); }

 private:
  std::mutex m_mutex;
  std::condition_variable m_ready;
  std::deque<std::string> m_lines;
  bool m_done = false;
  std::future<std::expected<SubprocessResult, std::string>> m_run;  // last: its thread uses the members above
};

// A problem's digest in the journal: a resume must find the file as it was.
std::string problem_digest(const std::string& file) {
  auto text = read_file(file);
  return text ? sha256_hex(*text) : "";
}

}  // namespace

ExitCode import_kernelbench(KernelbenchImport options, const std::string& output, const std::string& digests_path,
                            const JournalOptions& journal_options) {
  if (options.backend == Backend::cuda && !torch_has_cuda()) return usage_error("--device cuda: no CUDA device here");
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
  // The bridge makes the params folder too, but the journal, the output and the digests may go there first.
  std::error_code ignored;
  std::filesystem::create_directories(options.params_dir, ignored);
  auto opened_journal = open_journal(output, journal_options);
  if (!opened_journal) return opened_journal.error();
  RecordJournal* journal = *opened_journal ? &**opened_journal : nullptr;
  auto argv = import_bridge_command(options);
  if (!argv) {
    error(argv.error());
    return ExitCode::data_error;
  }
  // On resume the bridge gives only the place of each problem the journal holds, which is replayed from there.
  const std::string skip_path = journal != nullptr ? journal->path() + ".skip" : "";
  if (journal != nullptr && journal->resumed() > 0) {
    std::string list;
    for (const auto& key : journal->keys()) list += key + "\n";
    if (auto written = write_file_atomic(skip_path, list); !written) {
      error(written.error());
      return ExitCode::io_error;
    }
    argv->insert(argv->end(), {"--skip", skip_path});
  }
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
  int imported = 0, problems = 0;
  ExitCode code = write_records(output, [&](JsonlWriter& writer) {
    BridgeLines bridge(*argv);
    // Once the run must end, the bridge's remaining lines are taken and dropped until it has ended.
    std::optional<ExitCode> end;
    // One finished problem: stream 0 its record (task or import_error), stream 1 its digest record.
    auto emit_entry = [&](const JournalEntry& entry) -> std::optional<ExitCode> {
      for (const auto& [stream, out] : entry.out) {
        if (stream == 1) {
          if (digests && digests->write(out) != JsonlWriter::Status::ok) {
            error(digests_path, "writing failed");
            return ExitCode::io_error;
          }
          continue;
        }
        auto level =
            out.value("level", Json()).is_number() ? "level " + std::to_string(out["level"].get<int>()) : "other";
        ++problems;
        ++per_level[level].second;
        if (out.value("kind", "") == "task") {
          ++imported;
          ++per_level[level].first;
        } else {
          error(out.value("file", out.value("id", "?")), out.value("error", "import failed"));
        }
        if (auto stop = emit(writer, out)) return stop;
      }
      return std::nullopt;
    };
    while (auto line = bridge.next()) {
      if (end || line->empty()) continue;
      if (interrupted()) {
        end = ExitCode::interrupted;
        continue;
      }
      auto record = parse_json(*line);
      if (!record || !record->is_object()) {
        error("the bridge wrote a line that is not a JSON object");
        end = ExitCode::data_error;
        continue;
      }
      const std::string file = record->value("file", "");
      const std::string digest = journal != nullptr ? problem_digest(file) : "";
      std::optional<JournalEntry> entry;
      if (journal != nullptr) {
        auto found = journal->find(file, digest);
        if (!found) {
          error(file, found.error());
          end = ExitCode::usage;
          continue;
        }
        if (*found != nullptr) entry = **found;
      }
      if (!entry && record->value("kind", "") == "skipped") {
        error(file, "the bridge skipped a problem the journal does not hold");
        end = ExitCode::data_error;
        continue;
      }
      if (!entry) {
        std::expected<ImportedTask, std::string> done =
            record->value("kind", "") == "import_error"
                ? std::unexpected(record->value("error", "import failed"))
                : exception_as_error<ImportedTask>([&] { return finish_import(*record, options); });
        if (!done && interrupted()) {  // cut short, not finished: a resume imports it again
          end = ExitCode::interrupted;
          continue;
        }
        entry = JournalEntry{{{0, done ? done->task : import_error_record(*record, done.error())}}, std::nullopt};
        if (done && options.digests) entry->out.emplace_back(1, done->digest);
        if (journal != nullptr) {
          if (auto appended = journal->append(file, digest, *entry); !appended) {
            error(appended.error());
            end = ExitCode::io_error;
            continue;
          }
        }
      }
      end = emit_entry(*entry);
    }
    auto result = bridge.result();
    if (end) return *end;
    if (!result) {
      error(result.error());
      return ExitCode::data_error;
    }
    if (result->interrupted) return ExitCode::interrupted;
    if (!result->ok()) {
      std::string tail = result->err.substr(result->err.size() > 2000 ? result->err.size() - 2000 : 0);
      error("the bridge " + result->describe() + (tail.empty() ? "" : ": " + tail));
      return ExitCode::data_error;
    }
    return imported == problems ? ExitCode::ok : ExitCode::some_failed;
  });
  if (!skip_path.empty()) std::filesystem::remove(skip_path, ignored);
  if (digests && (code == ExitCode::ok || code == ExitCode::some_failed)) {
    if (auto committed = digests->commit(); !committed) {
      error(digests_path, committed.error());
      return ExitCode::io_error;
    }
  }
  if (code == ExitCode::ok || code == ExitCode::some_failed) code = finish_journal(*opened_journal, code);
  std::string summary = "imported " + std::to_string(imported) + " of " + std::to_string(problems);
  std::string levels;
  for (const auto& [level, counts] : per_level) {
    levels += (levels.empty() ? "" : ", ") + level + ": " + std::to_string(counts.first) + "/" +
              std::to_string(counts.second);
  }
  note(summary + (levels.empty() ? "" : " (" + levels + ")"));
  return code;
}

}  // namespace ca
