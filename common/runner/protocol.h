// The runner protocol (docs/EXPLOITS.md): the request the trusted side writes for ca-runner, and the results.jsonl
// lines the runner writes back; the outputs come back in the output region the request names (runner/output_region.h).
// Reference outputs never travel: both sides make the inputs from the same seeds with make_tensor_bytes.
#pragma once

#include <cstdint>
#include <expected>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/backend.h"
#include "ir/program.h"
#include "util/jsonl.h"

namespace ca {

/// The dtype and shape of one output buffer the runner allocates.
struct OutputSpec {
  DType dtype = DType::float32;
  std::vector<int64_t> shape;
  int64_t numel() const;
  size_t bytes() const;
};

/// One call of ca_forward: inputs are drawn from `seed`; output k goes to output_offsets[k] in the output region.
/// A request for ca-runner --serve carries no seeds (0 here): each call's seed arrives only when the call starts.
struct CallSpec {
  uint64_t seed = 0;
  std::vector<uint64_t> output_offsets;  // one per output; no two outputs of a request overlap
  /// This call's own draws, e.g. signed inputs on some trials (docs/EXPLOITS.md, B4): the request's tensors with other
  /// inits only (same names, dtypes and shapes). Empty: the request's tensors.
  std::optional<std::vector<TensorSpec>> tensors;
  const std::vector<TensorSpec>& tensors_or(const std::vector<TensorSpec>& request_tensors) const {
    return tensors ? *tensors : request_tensors;
  }
};

/// The file both sides map (OutputRegion): its path and the bytes of it the request uses.
struct OutputRegionSpec {
  std::string path;
  uint64_t bytes = 0;
};

struct RunRequest {
  std::string library;  // the candidate .so
  Backend backend = Backend::cpu;
  int32_t device_index = 0;
  int32_t num_threads = 1;
  std::vector<TensorSpec> tensors;  // the program's inputs then its params; tensor i is drawn from stream i
  std::vector<OutputSpec> outputs;
  std::vector<CallSpec> calls;
  OutputRegionSpec output_region;
  std::string output_dir;  // holds results.jsonl
  /// cpu, served: the trusted side writes each call's inputs into this file's slot (tensor k at input_offsets[k])
  /// while the runner is stopped, and the candidate reads them there; the runner draws nothing and writes the
  /// outputs nowhere but the output region, where the candidate writes them itself (serve_requests).
  std::optional<OutputRegionSpec> input_region;
  std::vector<uint64_t> input_offsets;
};

/// The file in output_dir that gets one line per event and per finished call.
inline constexpr std::string_view k_results_file = "results.jsonl";

/// Parses a request object. Errors name the field: "request.calls[1].seed: expected an unsigned integer, got string".
/// Every tensor must spell out its init, since inputs and params default to different distributions. Every output
/// must lie inside the output region and overlap no other output of the request (a later call would overwrite an
/// earlier one's before the trusted side reads it).
std::expected<RunRequest, std::string> parse_request(const Json& json, std::string_view path = "request");
/// Parses the text of a request file; bad JSON gives "invalid JSON: column N: ...".
std::expected<RunRequest, std::string> parse_request_text(const std::string& text, std::string_view path = "request");
Json to_json(const RunRequest& request);

/// What the runner reports about one finished call.
struct CallReport {
  uint64_t call = 0;  // index into RunRequest::calls
  uint64_t seed = 0;
  int64_t rc = 0;  // what ca_forward returned
  bool inputs_changed = false;
  std::vector<uint64_t> changed_inputs;  // indices into RunRequest::tensors
  double wall_us = 0;    // host clock of the ca_forward call (cuda: up to the device-wide sync); timing/clock.h
  double device_us = 0;  // device clock: cuda events on the call's stream (-1: none); cpu: the host clock
  /// cuda: "<name>: <cudaGetErrorString>" of an error the call left (a failed launch, an illegal address); "" when
  /// none. A call with a CUDA error writes no outputs.
  std::string cuda_error;
  /// The call's first ctx->workspace request that got NULL ("ctx->workspace(N bytes) returned NULL: out of memory"),
  /// "" when none: a non-zero return after it may be the device's memory, which other jobs share.
  std::string workspace_error{};
  /// cuda: launches of the candidate's own kernels during the call (runner/launches.h); -1 where not counted (cpu).
  int64_t own_launches = -1;
  /// Bytes of outputs the runner copied into the output region for this call (all outputs together); -1: none.
  int64_t output_bytes = -1;
  bool ok() const { return rc == 0 && !inputs_changed && cuda_error.empty() && own_launches != 0; }
};

/// {"call","seed","rc","inputs_changed","changed_inputs","wall_us","device_us","ok"}, plus "cuda_error" when there was
/// one, "workspace_error" when a workspace request failed, "own_launches" when they were counted and "output_bytes"
/// when outputs were written.
Json to_json(const CallReport& result);
/// {"event":"loaded", facts...}: dlopen and dlsym succeeded; written before the request's first call. The facts are
/// the runner's own account of its start-up (device_s, load_s, region_s; on cuda "region": "page-locked" or "pageable:
/// why"), reported for diagnosis and never used to judge.
Json loaded_event(const Json& facts = Json::object());
/// {"event":"load_failed","message":...}: the library could not be loaded or lacks ca_forward.
Json load_failed_event(std::string_view message);

/// Everything a results.jsonl says. A call of the request with no entry in `calls` crashed or hung the runner.
struct RunLog {
  bool loaded = false;
  std::string load_error;       // non-empty after a load_failed event
  Json facts = Json::object();  // the last loaded event's facts
  std::vector<CallReport> calls;
};

/// Parses one call's report (to_json(CallReport)), as ca-runner --serve sends it; errors name the field.
std::expected<CallReport, std::string> parse_call_report(std::string_view line);

/// Parses the text of results.jsonl. A last line without its newline (the runner died while writing it) is
/// ignored. Errors name the line: "results.jsonl:3: rc: missing field".
std::expected<RunLog, std::string> parse_results(std::string_view text);

/// The bytes of one poison element (see fill_poison); integer dtypes repeat 0xA5 whatever their width.
std::vector<uint8_t> poison_element(DType dtype);
/// Fills an output buffer with poison before each call: the canonical quiet NaN of a float dtype (float32 0x7FC00000,
/// float64 0x7FF8000000000000, float16 0x7E00, bfloat16 0x7FC0), 0xA5 bytes for integer and bool dtypes.
void fill_poison(DType dtype, std::span<uint8_t> bytes);
/// Counts the elements of an output that still hold poison, i.e. that the candidate most likely never wrote.
size_t count_poison(DType dtype, std::span<const uint8_t> bytes);

}  // namespace ca
