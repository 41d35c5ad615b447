// The baselines' own processes. A CUDA context keeps one speed for its whole life, and the same gemm's median
// differs by up to 9% between contexts while it agrees to 0.3% within one (bench/RESULTS.md, session 8). So
// ca-profile times eager and compiled in several ca-baseline processes, as it times the candidate in several
// runners, and each method's time is its fastest context's median (profile.h).
//
// The protocol, one JSON object a line each way: a request on the worker's stdin, its answer on the worker's stdout.
//   {"op": "load", job...}                       -> {"ok": true, "compile": {key, cached, seconds, kept}}
//                                                   or {"ok": true, "compile_error": "..."}
//   {"op": "time", job..., "method": "eager"|"compile", "seeds": [...]}
//                                                -> {"ok": true, "times": [us per timed call], "disagrees"?: "..."}
//   any failure                                  -> {"ok": false, "error": "..."}
// where the job is {"task", "backend", "threads", "tf32", "cache_dir", "python", "bridge", "atol", "rtol"}. A time
// request draws each call's inputs from its seed (make_tensors), leaves the first call untimed, and, for "compile",
// checks the first call's outputs against eager's on the same inputs ("disagrees" says how they differ).
#pragma once

#include <chrono>
#include <cstdint>
#include <expected>
#include <optional>
#include <string>
#include <vector>

#include "aten/compare.h"
#include "aten/compiled.h"
#include "ir/backend.h"
#include "util/jsonl.h"
#include "util/subprocess.h"

namespace ca {

/// What a worker needs to time a task's baselines as ca-profile asks.
struct BaselineJob {
  const Json* task = nullptr;
  Backend backend = Backend::cpu;
  int num_threads = 1;       // cpu: ATen's intra-op threads while timed
  CompiledOptions compiled;  // its cache, bridge and python; allow_tf32 is both baselines' precision
  Tolerance tolerance;       // for the compiled baseline's check against eager
};

/// One ca-baseline process, started by this one and ended with it.
class BaselineWorker {
 public:
  /// Starts `path` (default: ca-baseline beside this executable).
  static std::expected<BaselineWorker, std::string> start(const std::string& path = "");

  /// Asks it to load the job's compiled baseline, compiling it first when the cache lacks it; receive() answers.
  /// Split in two so that several workers load at once.
  std::expected<void, std::string> send_load(const BaselineJob& job);
  /// Times `method` ("eager" or "compile") on one call per seed; receive() answers.
  std::expected<void, std::string> send_time(const BaselineJob& job, const std::string& method, const std::vector<uint64_t>& seeds);
  /// The answer to the last request, its "ok" true; a failure's message, or the worker's end, is the error.
  /// `timeout` allows for a compile (minutes) or a round's calls.
  std::expected<Json, std::string> receive(std::chrono::milliseconds timeout);

 private:
  explicit BaselineWorker(Coprocess process) : m_process(std::move(process)) {}
  Coprocess m_process;
};

/// ca-baseline: answers requests from `in_fd` on `out_fd` until end of input. Fails only when it cannot read or
/// write; a request it cannot carry out is answered {"ok": false, "error"}.
std::expected<void, std::string> serve_baselines(int in_fd, int out_fd);

}  // namespace ca
