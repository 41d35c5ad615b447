// The runner proper: loads one candidate library into this (sandboxed) process and runs the calls of a request,
// copying each call's outputs into the output region and writing its results line before the next call starts
// (protocol.h); with --serve, the calls of one request after another in the same process (CandidateRunner,
// serve_requests).
#pragma once

#include <cstdint>
#include <expected>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "ca_kernel.h"
#include "runner/output_region.h"
#include "runner/protocol.h"
#include "util/exit_codes.h"

namespace ca {

/// Why a run stopped before its last call. A candidate that returns non-zero or changes its inputs does not stop
/// the run: that is a failed call, reported in results.jsonl.
enum class RunFailure {
  no_request,    // the request file cannot be read
  bad_request,   // the request is malformed or asks for what this runner cannot do (cuda in a build without CUDA)
  load_failed,   // dlopen or dlsym("ca_forward") failed; a load_failed event was written
  io_error,      // output_dir or results.jsonl not writable, the output region not mappable, or no memory for buffers
  interrupted,   // SIGINT or SIGTERM arrived between calls
  no_device,     // cuda: the device could not be set up (no GPU, no driver, a bad device_index)
  context_lost,  // cuda: a call left a sticky error (its line, with cuda_error, was written); later calls cannot run
  tampered,      // results.jsonl was changed or replaced by another writer (the candidate); nothing more was written
};

/// ca-runner's exit codes beyond the shared table of util/exit_codes.h, after sysexits.h.
inline constexpr ExitCode k_exit_no_device = ExitCode{69};     // EX_UNAVAILABLE
inline constexpr ExitCode k_exit_context_lost = ExitCode{70};  // EX_SOFTWARE
inline constexpr ExitCode k_exit_tampered = ExitCode{76};      // EX_PROTOCOL

struct RunError {
  RunFailure failure;
  std::string message;
};

struct RunSummary {
  size_t calls = 0;   // calls run
  size_t failed = 0;  // calls whose result has ok == false
};

/// Reads and parses a request file. Fails with no_request or bad_request.
std::expected<RunRequest, RunError> read_request(const std::string& path);

class Device;
class CallChannel;
using ForwardFn = int (*)(ca_context*, const ca_tensor*, int, ca_tensor*, int);  // ca_forward's type

/// One candidate on one device, for a runner process (ca-runner, one request or, with --serve, several): the first
/// request sets up the device (cuda: before the library loads) and loads the library (dlopen RTLD_NOW |
/// RTLD_LOCAL), and every request runs its calls in order. For each call it draws the inputs from (seed, stream =
/// tensor index) into fresh buffers (Device::fresh_input: make_tensor_bytes's bytes; on the GPU for cuda), poisons
/// fresh output buffers, times ca_forward (cuda: up to a device-wide sync) on the host clock, checks that the inputs
/// are unchanged (Device::input_changed), copies the outputs into their slices of the output region (mapped shared,
/// page-locked on cuda) and appends a flushed line to output_dir/results.jsonl with output_bytes. A call with a CUDA
/// error gets its line (with cuda_error) but writes no outputs; a crash inside the candidate ends the process. The
/// device's memory of handed-out addresses lives as long as this, so no buffer of any request is ever at an address
/// an earlier call of any request was given.
class CandidateRunner {
 public:
  CandidateRunner();
  ~CandidateRunner();
  CandidateRunner(const CandidateRunner&) = delete;
  CandidateRunner& operator=(const CandidateRunner&) = delete;

  /// Runs `request`'s calls (results.jsonl in its output_dir starts with the loaded or load_failed event) and says
  /// how many ran and failed, or why the run stopped early. A request after the first must name the same library,
  /// backend, device_index and num_threads (else bad_request): the library is loaded once and stays. A failure other
  /// than a failed call leaves the runner unfit for more requests (the process should exit with exit_code_of).
  std::expected<RunSummary, RunError> run(const RunRequest& request);
  /// As run(), with each call's seed taken from and its report given to `channel` (serve_requests: the pipe)
  /// instead of the request and results.jsonl, which then holds the loaded event only.
  std::expected<RunSummary, RunError> run(const RunRequest& request, CallChannel& channel);

 private:
  std::optional<OutputRegion> m_region;
  std::optional<OutputRegion> m_inputs;  // the request's input_region, mapped while requests name it
  std::expected<RunSummary, RunError> run_request(
      const RunRequest& request,
      CallChannel* channel);  // the last request's, mapped (and pinned on cuda) while requests reuse it
  std::unique_ptr<Device> m_device;
  RunRequest m_first;  // library, backend, device_index, num_threads of the first request
  ForwardFn m_forward = nullptr;
  Json m_facts = Json::object();  // what every loaded event says of the start-up (protocol.h)
};

/// How a request's calls are handed to the runner and reported: one at a time, the next one only once the last one's
/// report is out, so that nothing in the candidate's process tells a call that has not started (docs/EXPLOITS.md, B14).
class CallChannel {
 public:
  virtual ~CallChannel() = default;
  /// The library is loaded and the request's regions are mapped: no call has started.
  virtual std::expected<void, RunError> ready() = 0;
  /// Blocks until call `index` may start; returns its seed.
  virtual std::expected<uint64_t, RunError> start(size_t index, const CallSpec& call) = 0;
  /// The call's report, before the next start.
  virtual std::expected<void, RunError> report(const CallReport& report) = 0;
  /// At the edges of a call on the trusted side's input slot (mark "at" right before ca_forward, "end" right after
  /// it): says so and waits until the trusted side lets the process go on. The pipe: "<mark> <index>", then the process
  /// stops itself (SIGSTOP). Nothing for a request's own seeds.
  virtual std::expected<void, RunError> hold(const char* mark, size_t index) {
    (void)mark;
    (void)index;
    return {};
  }
};

/// ca-runner --serve, the conversation with the trusted side (runner_calls.h), one line each way at a time:
///   "ping <n>" -> "at <n>" and a stop (SIGSTOP to itself), "end <n>" and a stop, then a report of call n that ran
///   nothing (only before a request: the trusted side measures the runner's share of a timed window before the
///   candidate is loaded);
///   a request path -> "ready" once the library is loaded and the regions mapped, then for each call i in order
///   "call <i> <seed>" -> (with an input slot: "at <i>" and a stop right before ca_forward, "end <i>" and a stop right
///   after it) the call's report (protocol.h to_json(CallReport)) as one line. While the runner is stopped at "at" the
///   trusted side writes the call's inputs; at "end" it fixes its outputs; on cpu the time it counts is the process's
///   CPU time between the two. Returns at end of input, or with the first failure that ends the runner (the
///   request's path is in the message). The runner is the caller's, so that a process about to exit need not destroy
///   it.
std::expected<void, RunError> serve_requests(int in_fd, int out_fd, CandidateRunner& runner);

/// The exit code ca-runner uses for each failure (documented in ca-runner(1)).
ExitCode exit_code_of(RunFailure failure);

/// A fast 64-bit hash for detecting input mutation: any single changed 8-byte word changes it.
uint64_t hash_bytes(std::span<const uint8_t> bytes);

}  // namespace ca
