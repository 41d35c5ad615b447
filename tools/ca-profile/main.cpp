// ca-profile: time each candidate against eager and compiled baselines with one method, interleaved, checking the
// outputs of every timed call; records gain `profile`.
#include <cstdio>

#include "aten/candidates.h"
#include "aten/cpu_caching_allocator.h"
#include "aten/precompile.h"
#include "aten/profile.h"
#include "util/cli.h"

using namespace ca;

int main(int argc, char** argv) {
  ToolCli cli("ca-profile", "Time candidate kernels against eager and torch.compile baselines (DESIGN §7).");
  std::vector<std::string> inputs;
  std::string output = "-", tasks_path, workspace, backend_flag = "cpu", cuda_arch;
  ProfileOptions options;
  bool fail_fast = false, no_compile = false, precompile = false;
  double peak_gbps = 0;
  cli.default_jobs(cli.common().jobs, "Bridge processes compiling at once (--precompile)");
  auto& app = cli.app();
  app.add_option("FILE", inputs, "Candidate JSONL files, - for stdin (default)");
  app.add_option("-o,--output", output, "Output file, - for stdout")->capture_default_str();
  app.add_option("--tasks", tasks_path, "Task JSONL file for candidates that name a task_id");
  app.add_option("--workspace", workspace, "Profile an agent workspace (task.json + kernels/) and print one line");
  app.add_option("--backend", backend_flag, "Backend for --workspace and --precompile: cpu or cuda")->capture_default_str();
  app.add_flag("--precompile", precompile, "Only compile the torch.compile baselines of every task in --tasks, in -j bridge processes");
  app.add_option("--rounds", options.rounds, "Interleaved rounds (one runner serves them all)")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--min-ms", options.min_ms, "Measured milliseconds per method, at least")->capture_default_str();
  app.add_option("--max-calls", options.max_calls, "Timed calls per method and round, at most")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_flag("--no-compile", no_compile, "Do not time the torch.compile baseline");
  app.add_flag("--samples", options.samples, "Keep every timed call's time in the record, round by round (samples_us)");
  app.add_flag("--tf32", options.compiled.allow_tf32, "Let the baselines use TF32 for float32 matmuls and convolutions");
  app.add_option("--threads", options.num_threads, "cpu: threads of the candidate and of the baselines")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--atol", options.tolerance.atol, "Absolute tolerance for timed outputs")->capture_default_str();
  app.add_option("--rtol", options.tolerance.rtol, "Relative tolerance for timed outputs")->capture_default_str();
  app.add_option("--timeout", options.limits.wall_s, "Seconds one round's runner may take")->capture_default_str();
  app.add_option("--peak-gbps", peak_gbps, "Memory bandwidth for the speed-of-light floor (default: the device's)");
  app.add_option("--cuda-arch", cuda_arch, "nvcc -arch for the cuda backend (default: the GPU present)");
  app.add_flag("--fast-math", options.build.fast_math, "Build candidates with fast math");
  app.add_flag("--fail-fast", fail_fast, "Stop at the first record the harness cannot judge");
  if (auto code = cli.parse(argc, argv)) return to_int(*code);
  if (cli.app().count("--seed") > 0) options.seed = cli.common().seed;
  options.build.cuda_arch = cuda_arch;
  options.compile = !no_compile;
  options.peak_bytes_per_s = peak_gbps * 1e9;
  options.limits.cpu_s = options.limits.wall_s;
  if (precompile) {
    if (tasks_path.empty()) return to_int(usage_error("--precompile needs --tasks FILE"));
    if (no_compile || !inputs.empty() || !workspace.empty())
      return to_int(usage_error("--precompile takes --tasks only: no FILE, --workspace or --no-compile"));
    auto backend = parse_backend(backend_flag);
    if (!backend) return to_int(usage_error("--backend: expected cpu or cuda, got '" + backend_flag + "'"));
    const at::Device device = *backend == Backend::cuda ? at::Device(at::kCUDA, 0) : at::Device(at::kCPU);
    auto summary = precompile_tasks(tasks_path, device, baseline_options(options), cli.common().jobs,
                                    fail_fast ? OnBadRecord::stop : OnBadRecord::skip);
    if (summary.code == ExitCode::ok || summary.code == ExitCode::some_failed)
      std::fputs((summary_line(summary, device) + "\n").c_str(), stdout);
    return to_int(summary.code);
  }

  Judge profile = [&](const Json& task, const Json& candidate, Backend backend) -> std::expected<Json, std::string> {
    // A wrong candidate has nothing worth timing; its reward is -1 either way.
    if (auto verify = candidate.find("verify"); verify != candidate.end() && !verify->value("ok", false)) {
      return Json{{"ok", false}, {"skipped", "verification failed"}};
    }
    ProfileOptions per_record = options;
    per_record.build.backend = backend;
    // cpu: the baselines' tensors come from a caching allocator, so after each round's untimed first call their
    // outputs land on warm memory, as the runner's pre-touched buffers do for the candidate (cuda's caching
    // allocator does this on the device). Emptied after each record: a run over many tasks holds one profile's peak.
    if (backend == Backend::cpu && install_caching_cpu_allocator() == nullptr) {
      return std::unexpected("c10 kept another CPU allocator; the cpu baselines would fault fresh pages while timed");
    }
    auto profiled = profile_candidate(task, candidate, per_record);
    if (auto* cache = installed_caching_cpu_allocator()) cache->empty_cache();
    return profiled;
  };
  // Inside a workspace, plain `ca-profile` times it.
  if (workspace.empty()) workspace = implied_workspace(inputs);
  if (!workspace.empty()) return to_int(judge_workspace(workspace, backend_flag, profile, agent_profile_line));
  return to_int(judge_records(inputs, output, tasks_path, fail_fast, "profile", profile));
}
