// ca-verify: build each candidate, run it sandboxed on fresh inputs from
// secret seeds, and compare with the reference; records gain `verify`.
#include <cstdio>
#include <unistd.h>

#include "aten/candidates.h"
#include "aten/verify.h"
#include "util/cli.h"
#include "util/log.h"
#include "util/record_loop.h"
#include "util/record_output.h"

using namespace ca;

int main(int argc, char** argv) {
  ToolCli cli("ca-verify", "Check candidate kernels against their task's reference on fresh inputs (DESIGN §6).");
  std::vector<std::string> inputs;
  std::string output = "-", tasks_path, workspace, backend_flag = "cpu", cuda_arch;
  VerifyOptions options;
  bool fail_fast = false;
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

  // Inside a workspace, plain `ca-verify` checks it.
  if (workspace.empty() && inputs.empty() && isatty(STDIN_FILENO) && access("task.json", F_OK) == 0) workspace = ".";
  if (!workspace.empty()) {
    auto backend = parse_backend(backend_flag);
    if (!backend) return to_int(usage_error("--backend: expected cpu or cuda, got '" + backend_flag + "'"));
    options.build.backend = *backend;
    auto candidate = workspace_candidate(workspace, backend_flag);
    if (!candidate) {
      error(candidate.error());
      return to_int(ExitCode::no_input);
    }
    auto verdict = verify_candidate((*candidate)["task"], *candidate, options);
    if (!verdict) {
      error(verdict.error());
      return to_int(ExitCode::data_error);
    }
    std::fputs(agent_report(*verdict).c_str(), stdout);
    return to_int((*verdict)["ok"].get<bool>() ? ExitCode::ok : ExitCode::some_failed);
  }

  std::map<std::string, Json> tasks;
  if (!tasks_path.empty()) {
    auto loaded = load_tasks(tasks_path);
    if (!loaded) {
      error(loaded.error());
      return to_int(ExitCode::no_input);
    }
    tasks = std::move(*loaded);
  }
  if (inputs.empty()) inputs = {"-"};
  return to_int(write_records(output, [&](JsonlWriter& writer) {
    return transform_records(inputs, writer, fail_fast ? OnBadRecord::stop : OnBadRecord::skip,
                             [&](const Json& candidate) -> std::expected<Json, std::string> {
                               auto task = task_of(candidate, tasks);
                               if (!task) return std::unexpected(task.error());
                               VerifyOptions per_record = options;
                               auto backend = parse_backend(candidate.value("backend", "cpu"));
                               if (!backend) return std::unexpected("backend: expected \"cpu\" or \"cuda\"");
                               per_record.build.backend = *backend;
                               auto verdict = verify_candidate(*task, candidate, per_record);
                               if (!verdict) return std::unexpected(verdict.error());
                               Json out = candidate;
                               out["verify"] = *verdict;
                               return out;
                             });
  }));
}
