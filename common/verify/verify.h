// ca-verify's judgement of one candidate (docs/EXPLOITS.md): build it, run it in the
// sandboxed runner on fresh inputs from secret seeds, and compare every output
// with the reference interpreter's, which never leaves this process. Running
// holds the device's lease shared, so it waits while ca-profile times there.
#pragma once

#include <cstdint>
#include <expected>
#include <optional>
#include <string>

#include "harness/options.h"
#include "kernel/builder.h"
#include "sandbox/sandbox.h"
#include "util/jsonl.h"

namespace ca {

struct VerifyOptions {
  int trials = 5;
  Tolerance tolerance;
  BuildOptions build;
  SandboxLimits limits;
  std::optional<uint64_t> seed;  // reproduce a run; by default trial seeds come from std::random_device
  std::string runner;            // path of ca-runner; default: beside this executable
  int num_threads = 1;
  std::string lock_dir;  // for the device lease; "" = $CA_LOCK_DIR or /tmp
};

/// Returns the `verify` object for `candidate` ({files, backend}) against
/// `task` (a task record): {ok, stage, message, trials, checks, build,
/// tolerance}, and judged_alone when a_neighbour_may_cause its first verdict. `stage` names the first failing step:
/// static, compile, load, run, timeout or compare. Returns an error only when the harness itself fails (bad task,
/// sandbox unavailable, disk full).
std::expected<Json, std::string> verify_candidate(const Json& task, const Json& candidate,
                                                  const VerifyOptions& options);

/// Whether a failure's message says a device or host ran out of memory (CUDA's and LibTorch's words for it).
bool says_out_of_memory(const std::string& message);

/// Whether another job on the device could have caused this `verify` object's failure: a timeout (time on the device
/// is shared), or an out-of-memory at load or in a call (so is its memory). verify_candidate judges such a cuda
/// failure again with the device to itself (an exclusive lease), and records the first failure as `judged_alone`.
bool a_neighbour_may_cause(const Json& verify);

/// The verdict as an agent reads it: one [PASS] or [FAIL] line per step and trial.
std::string agent_report(const Json& verify);

}  // namespace ca
