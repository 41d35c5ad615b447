// ca-profile's timing of one candidate (docs/TIMING.md): the candidate in the sandboxed runner, eager (the interpreter)
// and compiled (the AOTInductor package) in this process, all with the one method of timing/clock.h, interleaved
// round by round on the same fresh inputs, under an exclusive lease of the device. Every timed call of the
// candidate is checked against eager's output for the same inputs (docs/EXPLOITS.md, B12).
#pragma once

#include <cstdint>
#include <expected>
#include <optional>
#include <string>
#include <vector>

#include "harness/options.h"
#include "kernel/builder.h"
#include "sandbox/sandbox.h"
#include "util/jsonl.h"

namespace ca {

struct ProfileOptions {
  BuildOptions build;
  SandboxLimits limits;          // per runner invocation, i.e. per round
  std::string runner;            // path of ca-runner; default: beside this executable
  int num_threads = 1;           // cpu: the candidate's ctx->num_threads and eager's intra-op threads
  std::optional<uint64_t> seed;  // reproduce a run; by default seeds are secret
  int rounds = 5;                // interleaved rounds, one runner invocation each; at most, when ci stops them sooner
  double min_ms = 100;           // measured time per method, at least (more calls per round until reached)
  int max_calls = 200;           // timed calls per method and round, at most
  double ci = 0;                 // > 0: stop after a counted round (the second or later) once every timed method's
                                 // median is known within +-ci of itself (95%, median_ci); 0: all rounds
  bool compile = true;           // time the compiled baseline
  bool samples = false;          // keep every timed call's time in the record (samples_us)
  CompiledOptions compiled;      // its cache; compiled.tf32 is the TF32 mode of both timed baselines;
                                 // num_threads comes from the field above (baseline_options)
  Tolerance tolerance;           // for the outputs of timed calls
  double peak_bytes_per_s = 0;   // the floor's bandwidth; 0: the device's own (timing/speed_of_light.h)
  std::string lock_dir;          // for the device lease; "" = $CA_LOCK_DIR or /tmp
};

/// Half the width of the distribution-free 95% confidence interval of the median of `times` (the order statistics
/// at n/2 -+ 0.98 sqrt(n)), over the median: 0.02 says the median is known within 2%. Infinity below 6 times.
double median_ci(std::vector<double> times);

/// The compiled baseline's options: options.compiled with the cpu threads of the candidate and of eager.
CompiledOptions baseline_options(const ProfileOptions& options);

/// Returns the `profile` object for `candidate` ({files, backend}) against `task`:
/// {ok, stage?, message, device, backend, method, precision, rounds, times_us:{candidate, eager, compile},
///  spread, count, speedup:{vs_eager, vs_compile}, floor_us, checked_calls, wall_s:{build, runner, runner_exit, eager,
///  compile, check, ...}, compile:{key, cached, seconds, kept (loaded for an earlier candidate of this process)} |
///  compile_error, runner (cuda: the runner's account of its start-up, device_s, load_s, and of the last round's
///  region, region_s, region; harness_region; rounds_s, each round's invocation on this side's clock),
///  samples_us:{candidate, eager, compile: [[us per timed call] per round]} and samples_began:{candidate, eager,
///  compile: [Unix seconds each round's part began]} with options.samples}. The compiled baseline's outputs are
///  checked against eager's on one call a round; the candidate's on every call.
/// ok is false when a timed call fails or differs from the reference (stage run/timeout/compare) or the
/// candidate's time is below the speed-of-light floor (stage floor). Returns an error only when the harness fails.
std::expected<Json, std::string> profile_candidate(const Json& task, const Json& candidate,
                                                   const ProfileOptions& options);

/// The agent's line: "Torch Baseline: 812.3 us, Torch Compile: 640.1 us, CUDA Extension: 512.9 us", or
/// "[FAIL] profile: ..." for a failed profile.
std::string agent_profile_line(const Json& profile);

}  // namespace ca
