// ca-filter: keep the task records that pass the paper's rubric (common/filter/filter.h); rejects go to --rejects
// with their reason, and a count per reason goes to stderr.
#include "filter/records.h"
#include "harness/flags.h"
#include "util/cli.h"
#include "util/exceptions.h"

using namespace ca;

int main(int argc, char** argv) try {
  ToolCli cli("ca-filter", "Keep the task records that pass the paper's filter rubric; write rejects with reasons.");
  FilterRun run;
  std::string device_name = "cpu";
  FilterOptions options;
  bool compile = false, no_compile = false;
  auto& app = cli.app();
  app.add_option("FILE", run.inputs, "Task JSONL files, - for stdin (default)");
  app.add_option("-o,--output", run.output, "Kept tasks, - for stdout")->capture_default_str();
  app.add_option("--rejects", run.rejects, "Write rejected tasks here, each with reject:{reason, detail}");
  app.add_option("--reference", run.references,
                 "Task records not to resemble (e.g. the KernelBench import); repeatable");
  app.add_option("--device", device_name, "Device to run and time on: cpu or cuda")->capture_default_str();
  auto* min_flag =
      app.add_option("--min-ms", options.min_ms, "Eager median at least (default cpu 0.01, cuda 1; 0: none)")
          ->check(non_negative(1e6));
  auto* max_flag =
      app.add_option("--max-ms", options.max_ms, "Eager median at most (default cpu 1000, cuda 100; 0: none)")
          ->check(non_negative(1e6));
  app.add_option("--calls", options.timed_calls, "Timed eager calls after one warm-up")
      ->capture_default_str()
      ->check(count(1e6));
  app.add_option("--threads", run.threads, "cpu: threads of eager (intra-op) and of the compiled baseline")
      ->capture_default_str()
      ->check(count(4096));
  app.add_flag("--compile", compile,
               "Check that the task runs under torch.compile (default on cuda; minutes a task on cpu)");
  app.add_flag("--no-compile", no_compile, "Do not check torch.compile (default on cpu)");
  add_tf32_flag(app, options.compiled.tf32);
  add_tolerance_flags(app, options.tolerance, "the negative controls (as ca-verify judges)");
  app.add_option("--max-similarity", options.max_similarity,
                 "Reject at this op-shingle similarity to a reference task or above")
      ->capture_default_str()
      ->check(number_in(0, 1));
  app.add_option("--rounding-share", options.rounding_share,
                 "Reject (noise-output) when a float64 run of the task, rounded, fails verification at this share of "
                 "--atol/--rtol (0: no check)")
      ->capture_default_str()
      ->check(number_in(0, 1));
  app.add_flag("--fail-fast", run.fail_fast, "Stop at the first record that cannot be judged");
  cli.add_resume_flag(&app, {"FILE", "--reference"});
  if (auto code = cli.parse(argc, argv)) return to_int(*code);

  auto backend = parse_backend(device_name);
  if (!backend) return to_int(usage_error("--device: expected cpu or cuda, got '" + device_name + "'"));
  options.backend = *backend;
  const bool cuda = options.backend == Backend::cuda;
  if (min_flag->count() == 0) options.min_ms = cuda ? 1 : 0.01;
  if (max_flag->count() == 0) options.max_ms = cuda ? 100 : 1000;
  if (options.max_ms > 0 && options.min_ms > options.max_ms) return to_int(usage_error("--min-ms is above --max-ms"));
  if (compile && no_compile) return to_int(usage_error("--compile and --no-compile exclude each other"));
  options.compile = compile || (cuda && !no_compile);
  options.seed = cli.common().seed;
  run.jobs = cli.common().jobs;
  run.journal = cli.journal_options();
  return to_int(filter_records(options, run));
} catch (...) {  // LibTorch's and the standard library's exceptions: util/exceptions.h
  return report_uncaught_exception();
}
