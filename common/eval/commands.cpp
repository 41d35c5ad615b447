// ca-eval's subcommands (commands.h).
#include "eval/commands.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "util/atomic_file.h"
#include "util/cli.h"
#include "util/executable_dir.h"
#include "util/log.h"
#include "util/record_output.h"

namespace ca {

namespace fs = std::filesystem;

namespace {

ExitCode report(const EvalError& failure) {
  error(failure.second);
  return failure.first;
}

// Writes `text` to `path` ("-": stdout), a file atomically; reports a failure as 74.
ExitCode write_text(const std::string& path, const std::string& text) {
  if (path == "-") {
    if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() || std::fflush(stdout) != 0) {
      error("writing output failed");
      return ExitCode::io_error;
    }
    return ExitCode::ok;
  }
  remove_stale_temporaries(path);  // left by a report that was killed
  if (auto written = write_file_atomic(path, text); !written) {
    error(written.error());
    return ExitCode::io_error;
  }
  return ExitCode::ok;
}

}  // namespace

std::expected<EvalRun, EvalError> load_run(const std::string& path) {
  auto records = read_all_records(path);
  if (!records) {
    return std::unexpected(
        EvalError{fs::exists(path) || path == "-" ? ExitCode::data_error : ExitCode::no_input, records.error()});
  }
  auto run = parse_run(*records);
  if (!run) return std::unexpected(EvalError{ExitCode::data_error, path + ": " + run.error()});
  return std::move(*run);
}

std::expected<WorkDir, std::string> make_work_dir(const std::string& given, const std::string& journal_path,
                                                  bool resume) {
  if (!given.empty()) {
    fs::create_directories(given);  // throws as it did in main: the tool's exception guard reports it
    return WorkDir{given, false};
  }
  WorkDir work;
  if (!journal_path.empty()) {
    // A journaled run keeps its tools' records, and their own journals, beside its journal until it completes; a
    // run that starts over starts from none.
    work = {journal_path + ".d", true};
    std::error_code ignored;
    if (!resume) fs::remove_all(work.path, ignored);
  } else {
    std::string pattern = (fs::temp_directory_path() / "ca-eval-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) return std::unexpected(pattern + ": " + std::strerror(errno));
    work = {pattern, true};
  }
  fs::create_directories(work.path);
  return work;
}

ExitCode eval_run(EvalOptions options, const std::string& output, const JournalOptions& journal_options) {
  if (options.solutions.empty() && options.policy.empty() && options.judged.empty() && options.modelnew.empty()) {
    return usage_error("run: one of --solutions, --modelnew, --policy or --judged is required");
  }
  if (options.bin_dir.empty()) options.bin_dir = executable_dir();  // ca-verify, ca-profile, ca-reward, ca-rollout
  auto journal = open_journal(output, journal_options);
  if (!journal) return journal.error();
  options.journal = *journal ? &**journal : nullptr;
  options.resume = options.journal != nullptr && journal_options.resume;
  auto work =
      make_work_dir(options.work_dir, options.journal != nullptr ? options.journal->path() : "", options.resume);
  if (!work) return report({ExitCode::io_error, work.error()});
  options.work_dir = work->path;
  auto records = run_eval(options);
  // A run cut short keeps the folder beside its journal for --resume.
  if (work->temporary && (records || options.journal == nullptr)) fs::remove_all(work->path);
  if (!records) return report(records.error());
  ExitCode code = write_records(output, [&](JsonlWriter& writer) {
    for (const Json& record : *records) {
      if (auto stop = emit(writer, record)) return *stop;
    }
    return ExitCode::ok;
  });
  if (code != ExitCode::ok && code != ExitCode::some_failed) return code;
  return finish_journal(*journal, code);
}

ExitCode write_eval_report(const std::string& results, const std::string& dir) {
  auto loaded = load_run(results);
  if (!loaded) return report(loaded.error());
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    error(dir, ec.message());
    return ExitCode::io_error;
  }
  if (auto code = write_text((fs::path(dir) / "report.md").string(), markdown_report(*loaded)); code != ExitCode::ok)
    return code;
  return write_text((fs::path(dir) / "report.html").string(), html_report(*loaded));
}

ExitCode compare_runs(const std::string& a, const std::string& b) {
  auto run_a = load_run(a);
  if (!run_a) return report(run_a.error());
  auto run_b = load_run(b);
  if (!run_b) return report(run_b.error());
  return write_text("-", compare_report(*run_a, *run_b));
}

}  // namespace ca
