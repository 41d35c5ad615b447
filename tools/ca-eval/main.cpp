// ca-eval: KernelBench-style metrics of solutions or a policy on a suite of tasks, reports and comparisons.
#include "eval/commands.h"
#include "harness/flags.h"
#include "util/cli.h"
#include "util/exceptions.h"

using namespace ca;

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
    options.jobs = cli.common().jobs;
    options.seed = cli.common().seed;
    if (no_compile) options.profile_flags.push_back("--no-compile");
    options.profile_flags.insert(options.profile_flags.end(), {"--tf32", tf32_mode_name(tf32)});
    return to_int(eval_run(std::move(options), output, cli.journal_options()));
  }
  if (report->parsed()) return to_int(write_eval_report(report_input, report_dir));
  return to_int(compare_runs(compare_a, compare_b));
} catch (...) {  // LibTorch's and the standard library's exceptions: util/exceptions.h
  return report_uncaught_exception();
}
