// Where the runner puts a call's buffers and how it waits for the candidate's work: host memory (cpu) or a CUDA
// device (cuda), behind one interface so that CandidateRunner's loop is the same for both.
#pragma once

#include <cstddef>
#include <cstdint>
#include <expected>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ca_kernel.h"
#include "ir/program.h"
#include "runner/run_candidate.h"
#include "timing/clock.h"

namespace ca {

/// What the device says once the candidate's work is finished.
struct CallOutcome {
  std::string cuda_error;     // "" when the call left no CUDA error
  bool context_lost = false;  // a sticky error: the context, and every later call, is dead
};

/// One backend's memory and synchronisation. Buffers handed out by fresh() and scratch() are the device's to free;
/// none of them is ever at an address an earlier call was handed (docs/EXPLOITS.md, C5).
class Device {
 public:
  virtual ~Device() = default;
  /// Fills the backend's fields of a call's context: device, device_index, stream, cublas, cudnn.
  virtual void fill_context(ca_context& ctx) = 0;
  /// A buffer at a fresh address holding make_tensor_bytes(spec, seed, stream), made in place: drawn into host
  /// memory on cpu, by kernels on the device on cuda (a file init is read on the host and copied). Fails with
  /// bad_request when a file init cannot be read, io_error when memory cannot be had, context_lost when the device
  /// fails.
  virtual std::expected<void*, RunError> fresh_input(const TensorSpec& spec, uint64_t seed, uint64_t stream,
                                                     const std::string& what) = 0;
  /// After the call: whether `data`, which fresh_input(spec, seed, stream) returned this call, holds other bytes
  /// now (cpu: its hash changed; cuda: a kernel compares it with the draw, or a file init's hash changed).
  virtual std::expected<bool, RunError> input_changed(const void* data, const TensorSpec& spec, uint64_t seed,
                                                      uint64_t stream) = 0;
  /// A buffer of `bytes` filled with fill_poison(dtype), at a fresh address. Fails with io_error.
  virtual std::expected<void*, RunError> fresh_poisoned(DType dtype, size_t bytes, const std::string& what) = 0;
  /// Copies the first `to.size()` bytes of `data`, a buffer of this call, into host memory `to` (a slice of the
  /// output region). cpu: memcpy. cuda: one DMA when `to` is page-locked (OutputRegion::pin), else through pinned
  /// staging memory (pageable memory where even that cannot be had). Fails with context_lost when the device fails.
  virtual std::expected<void, RunError> copy_out(const void* data, std::span<uint8_t> to) = 0;
  /// Right before ca_forward: waits for the copies, undoes state a previous call may have left (persisting L2,
  /// docs/EXPLOITS.md, C8) and clears stale errors. Fails with context_lost when the device is unusable.
  virtual std::expected<void, RunError> before_call() = 0;
  /// Right after ca_forward: waits for all work on the device, whatever stream it was queued on (docs/EXPLOITS.md, C1).
  virtual CallOutcome after_call() = 0;
  /// The timer of every call, the same method the trusted side times the baselines with.
  virtual CallClock& clock() = 0;
  /// Scratch for ctx->workspace, filled with 0xFF bytes (a NaN in every float dtype); NULL when it cannot be had.
  virtual void* scratch(size_t bytes) = 0;
  /// After the call's outputs were read: frees the scratch and retires the call's buffers.
  virtual void end_call() = 0;
};

/// Host memory, 64-byte aligned.
std::unique_ptr<Device> make_cpu_device();
/// CUDA device `device_index`, with a stream and a cuBLAS handle of the runner's own. Fails with bad_request when
/// this runner was built without the CUDA toolkit, with no_device when no usable GPU answers.
std::expected<std::unique_ptr<Device>, RunError> make_cuda_device(int32_t device_index);
/// How many CUDA devices this process sees; 0 without a GPU, a driver, or a build with CUDA.
int cuda_device_count();

}  // namespace ca
