// The sandboxed ca-runner for a built candidate: one invocation (run_in_runner, ca-verify) or one process serving
// every round of a profile (RunnerSession, ca-profile). Seeds go in, the runner's reports come back, and each call's
// outputs come back in an output region both processes map (runner/output_region.h), read here in place. Both sides
// draw the inputs from the seeds themselves, and the reference never leaves this process.
#pragma once

#include <cstdint>
#include <expected>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "ir/backend.h"
#include "runner/protocol.h"
#include "sandbox/sandbox.h"
#include "torch/interpreter.h"

namespace ca {

/// One call of ca_forward: its seed and whether inputs initialised `rand` are drawn from [-1, 1) instead.
struct RunnerCall {
  uint64_t seed = 0;
  bool signed_inputs = false;
};

struct RunnerOptions {
  Backend backend = Backend::cpu;
  SandboxLimits limits;
  std::string runner;  // path of ca-runner; default: beside this executable
  int num_threads = 1;
  /// cpu: the calls are timed, so the cache is flushed before each one (and before the pings that measure the
  /// runner's own overhead). Verification reads outputs, not times, and skips what a flush costs: a sweep of up to
  /// twice the last-level cache a call, and the flush's size measured once a process (timing/clock.h).
  bool timed = false;
};

struct RunnerCallResult {
  std::optional<CallReport> report;  // nullopt: the call crashed or hung the runner
  /// On the CPU: views of the output region, no copies (page-locked on cuda, so moving them to the GPU is one DMA).
  /// Each keeps the region mapped; a session's next run() writes over them, so it refuses while any is alive. Empty
  /// when the call wrote none.
  std::vector<at::Tensor> outputs;
  std::string output_problem;  // "no output written", "output is short: ...", or the region lost the output
};

struct RunnerOutcome {
  std::vector<RunnerCallResult> calls;  // one per requested call
  std::string load_error;               // the library could not be loaded
  SandboxResult sandbox;
  double elapsed_us = 0;  // the invocation (a session's: the round) on this process's clock; the runner's times
                          // cannot sum past it
  std::string untrusted;  // why no report of this invocation can be believed; "" normally
  Json runner_facts;      // the runner's own account of its start-up (protocol.h loaded_event), for diagnosis only
  std::string pin_error;  // cuda: why this side's view of the output region is pageable; "" when page-locked
};

/// Seeds the candidate cannot predict (docs/EXPLOITS.md, B14): std::random_device, or a fixed sequence from `seed` to
/// reproduce a run.
class SeedSource {
 public:
  explicit SeedSource(std::optional<uint64_t> seed) : m_fixed(seed.has_value()), m_sequence(seed.value_or(0)) {}
  uint64_t next() { return m_fixed ? m_sequence() : (uint64_t(m_device()) << 32) ^ m_device(); }

 private:
  bool m_fixed;
  std::mt19937_64 m_sequence;
  std::random_device m_device;
};

/// docs/EXPLOITS.md, B4: on inputs drawn from [0, 1), ReLU-like ops are the identity; signed draws expose shortcuts.
Program with_signed_inputs(const Program& program);

/// Runs `library` (built for options.backend) on `calls` in the sandboxed runner. Fails only when the harness
/// itself fails (no run directory, no room for the output region, no sandbox, unreadable results); the candidate's
/// failures are in the outcome, whose output views keep the region mapped as long as they live.
std::expected<RunnerOutcome, std::string> run_in_runner(const Program& program, const std::vector<TensorShape>& shapes,
                                                        const std::string& library,
                                                        const std::vector<RunnerCall>& calls,
                                                        const RunnerOptions& options);

/// One sandboxed runner (ca-runner --serve) for all the rounds of a profile, so that the sandbox, the device and
/// the library are set up once. Each run() is one request, answered as run_in_runner answers it: its results in a
/// directory of its own (io/round-K), its outputs in the session's output region (made for the first round, made
/// anew only when a round has more calls than it holds, so mapped and pinned about once on both sides), its
/// elapsed_us from sending the request to reading the runner's "done", and
/// its wall limit options.limits.wall_s (the first round's includes the start-up). RLIMIT_CPU counts the whole
/// process, so the session's CPU limit is options.limits.cpu_s * rounds (options() has it). Buffers stay at fresh
/// addresses across rounds: the runner keeps one Device. Between rounds the sandbox is paused (SIGSTOP), so nothing
/// in it runs while the baselines are timed. When the runner crashes, is killed at the wall limit, or
/// answers anything but "done", that round's outcome says so (sandbox, missing reports) and the session is over:
/// later runs report every call missing, with the same sandbox result.
class RunnerSession {
 public:
  /// Makes the run directory for rounds of at most `largest_round` calls (the runner's address-space limit allows
  /// for a region that big); the runner and the region start with the first run(). Fails as run_in_runner does.
  static std::expected<RunnerSession, std::string> open(const Program& program, const std::vector<TensorShape>& shapes,
                                                        const std::string& library, const RunnerOptions& options,
                                                        int rounds, size_t largest_round);
  RunnerSession(RunnerSession&&) noexcept;
  RunnerSession& operator=(RunnerSession&&) = delete;
  /// Finishes the runner if it still runs, and removes the run directory.
  ~RunnerSession();

  /// Runs `calls` as one round. Fails only when the harness fails (no room for the output region, an unwritable
  /// request, no sandbox, unreadable results, an interrupt) or is misused: more calls than `largest_round`, or
  /// outputs of an earlier round still alive.
  std::expected<RunnerOutcome, std::string> run(const std::vector<RunnerCall>& calls);
  /// Closes the runner's stdin and waits for it to exit (killing it after 10 s); how it ended, or nullopt when it
  /// never started. Later runs report every call missing.
  std::optional<SandboxResult> finish();
  /// The options the session runs with (limits.cpu_s is the whole session's); call_failure takes these.
  const RunnerOptions& options() const;

 private:
  struct State;
  explicit RunnerSession(std::unique_ptr<State> state);
  std::unique_ptr<State> m_state;
};

/// Why call `index` failed in the runner, or nullopt when it ran cleanly: stage "timeout" or "run", and a message
/// that starts with `label` ("trial 2/5").
struct CallFailure {
  std::string stage, message;
};
std::optional<CallFailure> call_failure(const RunnerOutcome& outcome, size_t index, const std::string& label,
                                        const RunnerOptions& options);

}  // namespace ca
