#include "profile/records.h"

#include <cstdio>

#include "torch/cpu_caching_allocator.h"
#include "torch/precompile.h"
#include "util/cli.h"

namespace ca {

Judge profile_judge(const ProfileOptions& options) {
  return [options](const Json& task, const Json& candidate, Backend backend) -> std::expected<Json, std::string> {
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
}

void add_timing_flags(CLI::App& app, ProfileOptions& options) {
  app.add_option("--rounds", options.rounds, "Interleaved rounds (one runner serves them all)")
      ->capture_default_str()
      ->check(count(1e4));
  app.add_option("--min-ms", options.min_ms, "Measured milliseconds per method, at least")
      ->capture_default_str()
      ->check(non_negative(1e6));
  app.add_option("--max-calls", options.max_calls, "Timed calls per method and round, at most")
      ->capture_default_str()
      ->check(count(1e9));
  app.add_option("--ci", options.ci,
                 "Stop after a counted round (the second or later) once each method's median is known within this "
                 "fraction (95% interval); 0: all --rounds")
      ->capture_default_str()
      ->check(non_negative(1));
  app.add_flag("--samples", options.samples, "Keep every timed call's time in the record, round by round (samples_us)");
  app.add_option("--threads", options.num_threads, "cpu: threads of the candidate and of the baselines")
      ->capture_default_str()
      ->check(count(4096));
}

void apply_workspace_timing(const CLI::App& app, ProfileOptions& options) {
  if (app.count("--rounds") == 0) options.rounds = 9;
  if (app.count("--max-calls") == 0) options.max_calls = 25;
  if (app.count("--ci") == 0) options.ci = 0.02;
}

ExitCode precompile_baselines(const std::string& tasks_path, Backend backend, const ProfileOptions& options,
                              unsigned jobs, OnBadRecord on_bad) {
  const at::Device device = backend == Backend::cuda ? at::Device(at::kCUDA, 0) : at::Device(at::kCPU);
  auto summary = precompile_tasks(tasks_path, device, baseline_options(options), jobs, on_bad);
  if (summary.code == ExitCode::ok || summary.code == ExitCode::some_failed) {
    std::fputs((summary_line(summary, device) + "\n").c_str(), stdout);
  }
  return summary.code;
}

}  // namespace ca
