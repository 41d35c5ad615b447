// ca-eval: KernelBench-style metrics of solutions or a policy on a suite of tasks, reports and comparisons.
#include <filesystem>

#include "eval/report.h"
#include "eval/run.h"
#include "harness/flags.h"
#include "util/atomic_file.h"
#include "util/cli.h"
#include "util/exceptions.h"
#include "util/log.h"
#include "util/record_output.h"

using namespace ca;
namespace fs = std::filesystem;

namespace {

std::string own_directory() {
  std::error_code ec;
  return fs::read_symlink("/proc/self/exe", ec).parent_path().string();
}

// Reads a results file of `ca-eval run`; reports the error and returns its code on failure.
std::expected<EvalRun, ExitCode> load_run(const std::string& path) {
  auto records = read_all_records(path);
  if (!records) {
    error(records.error());
    return std::unexpected(fs::exists(path) || path == "-" ? ExitCode::data_error : ExitCode::no_input);
  }
  auto run = parse_run(*records);
  if (!run) {
    error(path, run.error());
    return std::unexpected(ExitCode::data_error);
  }
  return *run;
}

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

int main(int argc, char** argv) try {
  ToolCli cli("ca-eval",
              "Evaluate solutions or a policy on a task suite with KernelBench's metrics; report and compare runs.");
  auto& app = cli.app();
  app.require_subcommand(1);
  EvalOptions options;
  std::string output = "-", report_input, report_dir, compare_a, compare_b;
  bool no_compile = false;
  Tf32Mode tf32 = Tf32Mode::pytorch;
  auto* run = app.add_subcommand("run", "Judge a suite and write per-task results and a summary record");
  run->add_option("--suite", options.suite, "Task JSONL file")->required();
  auto* solutions =
      run->add_option("--solutions", options.solutions, "Candidate JSONL file, or a folder of <task dir>/kernels/...");
  auto* policy = run->add_option("--policy", options.policy, "Run ca-rollout with this policy over the suite");
  auto* judged = run->add_option("--judged", options.judged,
                                 "Records already judged (ca-verify|ca-profile|ca-reward output, trajectories)");
  auto* modelnew = run->add_option("--modelnew", options.modelnew,
                                   "Folder of KernelBench-format solutions: <problem>.py with class ModelNew");
  solutions->excludes(policy)->excludes(judged)->excludes(modelnew);
  policy->excludes(judged)->excludes(modelnew);
  judged->excludes(modelnew);
  run->add_option("--trials", options.trials, "--modelnew: checked calls on fresh inputs before timing")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  run->add_option("--timed-calls", options.timed_calls, "--modelnew: timed calls, each output checked too")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  run->add_option("--rejects", options.rejects, "ca-filter rejects: these tasks are degenerate, reported apart");
  run->add_option("--backend", options.backend, "Backend of folder solutions and of the policy's workspaces")
      ->capture_default_str()
      ->check(CLI::IsMember({"cpu", "cuda"}));
  run->add_flag("--no-compile", no_compile, "Profile without the torch.compile baseline");
  add_tf32_flag(*run, tf32);
  run->add_option("-o,--output", output, "Results JSONL file, - for stdout")->capture_default_str();
  run->add_option("--workdir", options.work_dir,
                  "Keep the tools' intermediate records here (default: a temporary folder)");
  cli.add_resume_flag(run, {"--suite", "--solutions", "--judged", "--rejects"});
  auto* report = app.add_subcommand("report", "Write report.md and report.html of a results file");
  report->add_option("RESULTS", report_input, "Results JSONL of ca-eval run")->required();
  report->add_option("-o,--output-dir", report_dir, "Folder for report.md and report.html")->required();
  auto* compare = app.add_subcommand("compare", "Compare two results files in Markdown on stdout");
  compare->add_option("A", compare_a, "Results JSONL of run A")->required();
  compare->add_option("B", compare_b, "Results JSONL of run B")->required();
  if (auto code = cli.parse(argc, argv)) return to_int(*code);

  if (run->parsed()) {
    if (options.solutions.empty() && options.policy.empty() && options.judged.empty() && options.modelnew.empty()) {
      return to_int(usage_error("run: one of --solutions, --modelnew, --policy or --judged is required"));
    }
    options.bin_dir = own_directory();
    options.jobs = cli.common().jobs;
    options.seed = cli.common().seed;
    if (no_compile) options.profile_flags.push_back("--no-compile");
    options.profile_flags.insert(options.profile_flags.end(), {"--tf32", tf32_mode_name(tf32)});
    const JournalOptions journal_options = cli.journal_options();
    auto journal = open_journal(output, journal_options);
    if (!journal) return to_int(journal.error());
    options.journal = *journal ? &**journal : nullptr;
    options.resume = options.journal != nullptr && journal_options.resume;
    std::string temp_dir;
    if (options.work_dir.empty() && options.journal != nullptr) {
      // A journaled run keeps its tools' records, and their own journals, beside its journal until it completes; a
      // run that starts over starts from none.
      options.work_dir = temp_dir = options.journal->path() + ".d";
      std::error_code ignored;
      if (!options.resume) fs::remove_all(temp_dir, ignored);
    } else if (options.work_dir.empty()) {
      std::string pattern = (fs::temp_directory_path() / "ca-eval-XXXXXX").string();
      if (mkdtemp(pattern.data()) == nullptr) return to_int(ExitCode::io_error);
      options.work_dir = temp_dir = pattern;
    }
    fs::create_directories(options.work_dir);
    auto records = run_eval(options);
    // A run cut short keeps the folder beside its journal for --resume.
    if (!temp_dir.empty() && (records || options.journal == nullptr)) fs::remove_all(temp_dir);
    if (!records) {
      error(records.error().second);
      return to_int(records.error().first);
    }
    ExitCode code = write_records(output, [&](JsonlWriter& writer) {
      for (const Json& record : *records) {
        if (auto stop = emit(writer, record)) return *stop;
      }
      return ExitCode::ok;
    });
    if (code != ExitCode::ok && code != ExitCode::some_failed) return to_int(code);
    return to_int(finish_journal(*journal, code));
  }
  if (report->parsed()) {
    auto loaded = load_run(report_input);
    if (!loaded) return to_int(loaded.error());
    std::error_code ec;
    fs::create_directories(report_dir, ec);
    if (ec) {
      error(report_dir, ec.message());
      return to_int(ExitCode::io_error);
    }
    if (auto code = write_text((fs::path(report_dir) / "report.md").string(), markdown_report(*loaded));
        code != ExitCode::ok)
      return to_int(code);
    return to_int(write_text((fs::path(report_dir) / "report.html").string(), html_report(*loaded)));
  }
  auto a = load_run(compare_a);
  if (!a) return to_int(a.error());
  auto b = load_run(compare_b);
  if (!b) return to_int(b.error());
  return to_int(write_text("-", compare_report(*a, *b)));
} catch (...) {  // LibTorch's and the standard library's exceptions: util/exceptions.h
  return report_uncaught_exception();
}
