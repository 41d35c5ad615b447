// ca-profile: time each candidate against eager and compiled baselines with one method, interleaved, checking the
// outputs of every timed call; records gain `profile`.
#include "harness/flags.h"
#include "profile/records.h"
#include "util/cli.h"
#include "util/exceptions.h"

using namespace ca;

int main(int argc, char** argv) try {
  ToolCli cli("ca-profile", "Time candidate kernels against eager and torch.compile baselines (docs/TIMING.md).");
  std::vector<std::string> inputs;
  std::string output = "-";
  CandidateSources sources;
  ProfileOptions options;
  bool fail_fast = false, no_compile = false, precompile = false;
  double peak_gbps = 0;
  cli.secret_seed_default();
  cli.default_jobs(cli.common().jobs, "Bridge processes compiling at once (--precompile)");
  auto& app = cli.app();
  app.add_option("FILE", inputs, "Candidate JSONL files, - for stdin (default)");
  app.add_option("-o,--output", output, "Output file, - for stdout")->capture_default_str();
  add_candidate_source_flags(app, sources, "profile");
  app.add_flag("--precompile", precompile,
               "Only compile the torch.compile baselines of every task in --tasks, in -j bridge processes");
  add_timing_flags(app, options);
  app.add_flag("--no-compile", no_compile, "Do not time the torch.compile baseline");
  add_tf32_flag(app, options.compiled.tf32);
  add_tolerance_flags(app, options.tolerance, "the timed outputs");
  add_runner_timeout_flag(app, options.limits);
  app.add_option("--peak-gbps", peak_gbps, "Memory bandwidth for the speed-of-light floor (default: the device's)")
      ->check(positive(1e6));
  add_build_flags(app, options.build);
  app.add_flag("--fail-fast", fail_fast, "Stop at the first record the harness cannot judge");
  cli.add_resume_flag(&app, {"FILE", "--tasks"});
  if (auto code = cli.parse(argc, argv)) return to_int(*code);
  if (cli.app().count("--seed") > 0) options.seed = cli.common().seed;
  options.compile = !no_compile;
  options.peak_bytes_per_s = peak_gbps * 1e9;
  if (precompile) {
    if (sources.tasks.empty()) return to_int(usage_error("--precompile needs --tasks FILE"));
    if (no_compile || !inputs.empty() || !sources.workspace.empty())
      return to_int(usage_error("--precompile takes --tasks only: no FILE, --workspace or --no-compile"));
    auto backend = parse_backend(sources.backend);
    if (!backend) return to_int(usage_error("--backend: expected cpu or cuda, got '" + sources.backend + "'"));
    return to_int(precompile_baselines(sources.tasks, *backend, options, cli.common().jobs,
                                       fail_fast ? OnBadRecord::stop : OnBadRecord::skip));
  }
  // Inside a workspace, plain `ca-profile` times it.
  if (auto code = settle_workspace(inputs, sources.workspace, sources.backend, app.count("--backend") > 0))
    return to_int(*code);
  if (!sources.workspace.empty()) {
    apply_workspace_timing(app, options);
    return to_int(judge_workspace(sources.workspace, sources.backend, profile_judge(options), agent_profile_line));
  }
  Judge profile = profile_judge(options);
  return to_int(judge_records(inputs, output, sources.tasks, fail_fast, "profile", profile, 1, cli.journal_options()));
} catch (...) {  // LibTorch's and the standard library's exceptions: util/exceptions.h
  return report_uncaught_exception();
}
