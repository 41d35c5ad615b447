#include "harness/flags.h"

#include <sstream>

#include "util/cli.h"

namespace ca {

void add_tolerance_flags(CLI::App& app, Tolerance& tolerance, const std::string& applies_to) {
  // A relative tolerance of 1 or more lets zeros pass every output; NaN would let anything pass.
  app.add_option("--atol", tolerance.atol, "Absolute tolerance of " + applies_to)
      ->capture_default_str()
      ->check(non_negative(1e6));
  app.add_option("--rtol", tolerance.rtol, "Relative tolerance of " + applies_to)
      ->capture_default_str()
      ->check(number_in(0, 1, "[)"));
}

void add_tf32_flag(CLI::App& app, Tf32Mode& mode) {
  app.add_option_function<std::string>(
         "--tf32", [&mode](const std::string& name) { mode = *parse_tf32_mode(name); },
         "TF32 in the timed baselines: none (fp32 everywhere), pytorch (PyTorch's defaults: cuDNN convolutions TF32, "
         "cuBLAS matmuls fp32) or all (both TF32); correctness references stay fp32")
      ->type_name("MODE")
      ->default_str(tf32_mode_name(mode))
      ->check(one_of(std::vector<std::string>(k_tf32_mode_names.begin(), k_tf32_mode_names.end())));
}

void add_build_flags(CLI::App& app, BuildOptions& build) {
  app.add_option("--cuda-arch", build.cuda_arch, "nvcc -arch for the cuda backend (default: the GPU present)");
  app.add_flag("--fast-math", build.fast_math, "Build candidates with fast math");
}

void add_runner_timeout_flag(CLI::App& app, SandboxLimits& limits) {
  std::ostringstream default_s;
  default_s << limits.wall_s;
  app.add_option_function<double>(
         "--timeout", [&limits](double seconds) { limits.wall_s = limits.cpu_s = seconds; },
         "Seconds one runner invocation may take, wall clock and CPU (ca-verify: all trials; ca-profile: one round)")
      ->default_str(default_s.str())
      ->check(seconds());
}

void add_candidate_source_flags(CLI::App& app, CandidateSources& sources, const std::string& judging) {
  app.add_option("--tasks", sources.tasks, "Task JSONL file for candidates that name a task_id");
  app.add_option(
      "--workspace", sources.workspace,
      "Instead of records, " + judging + " an agent workspace (task.json + kernels/) and print for the agent");
  app.add_option("--backend", sources.backend,
                 "Backend of precompiled baselines, and of --workspace when given (default: the one the workspace "
                 "records): cpu or cuda")
      ->capture_default_str();
}

}  // namespace ca
