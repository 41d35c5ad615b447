// ca-verify: build each candidate, run it sandboxed on fresh inputs from
// secret seeds, and compare with the reference; records gain `verify`.
#include "harness/flags.h"
#include "sandbox/sandbox.h"
#include "util/cli.h"
#include "util/exceptions.h"
#include "verify/records.h"

using namespace ca;

int main(int argc, char** argv) try {
  ToolCli cli("ca-verify",
              "Check candidate kernels against their task's reference on fresh inputs (docs/EXPLOITS.md).");
  std::vector<std::string> inputs;
  std::string output = "-";
  CandidateSources sources;
  VerifyOptions options;
  bool fail_fast = false;
  cli.secret_seed_default();
  cli.default_jobs(1, "Candidates verified at once: builds and runs overlap (each run holds a trial's tensors)");
  auto& app = cli.app();
  app.add_option("FILE", inputs, "Candidate JSONL files, - for stdin (default)");
  app.add_option("-o,--output", output, "Output file, - for stdout")->capture_default_str();
  add_candidate_source_flags(app, sources, "verify");
  app.add_option("--trials", options.trials, "Trials on fresh inputs")->capture_default_str()->check(count(1e6));
  add_tolerance_flags(app, options.tolerance, "the outputs");
  add_runner_timeout_flag(app, options.limits);
  add_build_flags(app, options.build);
  app.add_flag("--fail-fast", fail_fast, "Stop at the first record the harness cannot judge");
  cli.add_resume_flag(&app, {"FILE", "--tasks"});
  if (auto code = cli.parse(argc, argv)) return to_int(*code);
  if (cli.app().count("--seed") > 0) options.seed = cli.common().seed;
  // -j N runs N candidates at once: each gets its share of the host's memory, not the whole default each.
  options.limits.memory_bytes = host_memory_share(options.limits.memory_bytes, cli.common().jobs);

  Judge verify = verify_judge(options);
  // Inside a workspace, plain `ca-verify` checks it.
  if (auto code = settle_workspace(inputs, sources.workspace, sources.backend, app.count("--backend") > 0))
    return to_int(*code);
  if (!sources.workspace.empty())
    return to_int(judge_workspace(sources.workspace, sources.backend, verify, agent_report));
  return to_int(judge_records(inputs, output, sources.tasks, fail_fast, "verify", verify, cli.common().jobs,
                              cli.journal_options()));
} catch (...) {  // LibTorch's and the standard library's exceptions: util/exceptions.h
  return report_uncaught_exception();
}
