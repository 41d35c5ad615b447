// ca-verify: build each candidate, run it sandboxed on fresh inputs from
// secret seeds, and compare with the reference; records gain `verify`.
#include "aten/candidates.h"
#include "aten/verify.h"
#include "util/cli.h"

using namespace ca;

int main(int argc, char** argv) {
  ToolCli cli("ca-verify", "Check candidate kernels against their task's reference on fresh inputs (DESIGN §6).");
  std::vector<std::string> inputs;
  std::string output = "-", tasks_path, workspace, backend_flag = "cpu", cuda_arch;
  VerifyOptions options;
  bool fail_fast = false;
  cli.default_jobs(1, "Candidates verified at once: builds and runs overlap (each run holds a trial's tensors)");
  auto& app = cli.app();
  app.add_option("FILE", inputs, "Candidate JSONL files, - for stdin (default)");
  app.add_option("-o,--output", output, "Output file, - for stdout")->capture_default_str();
  app.add_option("--tasks", tasks_path, "Task JSONL file for candidates that name a task_id");
  app.add_option("--workspace", workspace, "Verify an agent workspace (task.json + kernels/) and print [PASS]/[FAIL] lines");
  app.add_option("--backend", backend_flag, "Backend for --workspace: cpu or cuda")->capture_default_str();
  app.add_option("--trials", options.trials, "Trials on fresh inputs")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--atol", options.tolerance.atol, "Absolute tolerance")->capture_default_str();
  app.add_option("--rtol", options.tolerance.rtol, "Relative tolerance")->capture_default_str();
  app.add_option("--timeout", options.limits.wall_s, "Seconds the runner may take for all trials")->capture_default_str();
  app.add_option("--cuda-arch", cuda_arch, "nvcc -arch for the cuda backend (default: the GPU present)");
  app.add_flag("--fast-math", options.build.fast_math, "Build candidates with fast math");
  app.add_flag("--fail-fast", fail_fast, "Stop at the first record the harness cannot judge");
  if (auto code = cli.parse(argc, argv)) return to_int(*code);
  if (cli.app().count("--seed") > 0) options.seed = cli.common().seed;
  options.build.cuda_arch = cuda_arch;
  options.limits.cpu_s = options.limits.wall_s;

  Judge verify = [&](const Json& task, const Json& candidate, Backend backend) {
    VerifyOptions per_record = options;
    per_record.build.backend = backend;
    return verify_candidate(task, candidate, per_record);
  };
  // Inside a workspace, plain `ca-verify` checks it.
  if (workspace.empty()) workspace = implied_workspace(inputs);
  if (!workspace.empty()) return to_int(judge_workspace(workspace, backend_flag, verify, agent_report));
  return to_int(judge_records(inputs, output, tasks_path, fail_fast, "verify", verify, cli.common().jobs));
}
