// The cuda backend's Device (see device.h): device buffers at fresh addresses, a stream and a cuBLAS handle of the
// runner's own, persisting L2 reset before every call, and a device-wide sync that catches sticky errors after it.
#include "runner/device.h"

#ifdef CA_WITH_CUDA

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <unordered_map>
#include <unordered_set>

#include "ir/tensor_init.h"
#include "ir/tensor_init_cuda.h"

namespace ca {
namespace {

using Error = std::unexpected<RunError>;

constexpr int k_fresh_attempts = 16;

std::string describe(cudaError_t error) {
  return std::string(cudaGetErrorName(error)) + ": " + cudaGetErrorString(error);
}

// The runner's timer, keeping the candidate's launch error: the events and syncs of stop() would otherwise
// overwrite what cudaGetLastError reports in after_call().
class KeepErrorClock final : public CallClock {
 public:
  KeepErrorClock(std::unique_ptr<CallClock> clock, cudaError_t& pending)
      : m_clock(std::move(clock)), m_pending(pending) {}
  void prepare() override { m_clock->prepare(); }
  void start() override { m_clock->start(); }
  ClockSample stop() override {
    if (cudaError_t error = cudaGetLastError(); error != cudaSuccess && m_pending == cudaSuccess) m_pending = error;
    ClockSample sample = m_clock->stop();
    cudaGetLastError();  // the timer's own refusals are not the candidate's
    return sample;
  }
  size_t flush_bytes() const override { return m_clock->flush_bytes(); }

 private:
  std::unique_ptr<CallClock> m_clock;
  cudaError_t& m_pending;
};

class CudaDevice final : public Device {
 public:
  CudaDevice(int32_t index, cudaStream_t stream, cublasHandle_t cublas, void* cublas_workspace,
             size_t cublas_workspace_bytes, std::unique_ptr<CallClock> clock)
      : m_index(index),
        m_stream(stream),
        m_cublas(cublas),
        m_cublas_workspace(cublas_workspace),
        m_cublas_workspace_bytes(cublas_workspace_bytes),
        m_timed(std::move(clock), m_pending) {}
  CudaDevice(const CudaDevice&) = delete;
  CudaDevice& operator=(const CudaDevice&) = delete;

  // After a sticky error these calls fail harmlessly; the process ends right after.
  ~CudaDevice() override {
    cudaDeviceSynchronize();
    for (void* data : m_scratch) cudaFree(data);
    for (void* data : m_call) cudaFree(data);
    free_retired();
    if (m_cublas != nullptr) cublasDestroy(m_cublas);
    cudaFree(m_cublas_workspace);
    cudaFreeHost(m_staging);
    cudaStreamDestroy(m_stream);
  }

  void fill_context(ca_context& ctx) override {
    ctx.device = CA_DEVICE_CUDA;
    ctx.device_index = m_index;
    ctx.stream = m_stream;
    ctx.cublas = m_cublas;
    ctx.cudnn = nullptr;
  }

  // Drawn on the device, on the call's stream (before_call waits for it): nothing is drawn on the host, and
  // nothing crosses the bus. A file init is read on the host and copied.
  std::expected<void*, RunError> fresh_input(const TensorSpec& spec, uint64_t seed, uint64_t stream,
                                             const std::string& what) override {
    if (spec.init.dist == Dist::file) {
      auto bytes = make_tensor_bytes(spec, seed, stream);
      if (!bytes) return Error({RunFailure::bad_request, bytes.error()});
      auto data = fresh_copy(*bytes, what);
      if (data) m_file_hashes[*data] = hash_bytes(*bytes);
      return data;
    }
    const auto count = uint64_t(spec.numel());
    auto data = fresh(count * dtype_size(spec.dtype), what);
    if (!data) return Error(data.error());
    if (cudaError_t error = draw_on_device(draw_params(spec), spec.dtype, count, seed, stream, *data, m_stream);
        error != cudaSuccess) {
      return Error({RunFailure::context_lost, "drawing " + what + " on the device: " + describe(error)});
    }
    return *data;
  }

  // Compared with a fresh draw on the device, so no input is copied back; a file init by its hash, as on cpu.
  std::expected<bool, RunError> input_changed(const void* data, const TensorSpec& spec, uint64_t seed,
                                              uint64_t stream) override {
    const auto count = uint64_t(spec.numel());
    if (spec.init.dist == Dist::file) {
      auto bytes = stage(data, count * dtype_size(spec.dtype));
      if (!bytes) return Error(bytes.error());
      return hash_bytes(*bytes) != m_file_hashes.at(data);
    }
    bool differs = false;
    if (cudaError_t error =
            differs_on_device(draw_params(spec), spec.dtype, count, seed, stream, data, m_stream, differs);
        error != cudaSuccess) {
      return Error({RunFailure::context_lost, "checking input '" + spec.name + "' on the device: " + describe(error)});
    }
    return differs;
  }

  // Filled on the device, on the call's stream (before_call waits for it): a host copy would cross the bus each call.
  std::expected<void*, RunError> fresh_poisoned(DType dtype, size_t bytes, const std::string& what) override {
    auto data = fresh(bytes, what);
    if (!data) return Error(data.error());
    const std::vector<uint8_t> element = poison_element(dtype);
    if (cudaError_t error = fill_on_device(*data, bytes / element.size(), element.data(), element.size(), m_stream);
        error != cudaSuccess) {
      return Error({RunFailure::context_lost, "poisoning " + what + " on the device: " + describe(error)});
    }
    return *data;
  }

  std::expected<void, RunError> copy_out(const void* data, std::span<uint8_t> to) override {
    if (to.empty()) return {};
    if (!page_locked(to.data())) {
      auto staged = stage(data, to.size());
      if (!staged) return Error(staged.error());
      std::memcpy(to.data(), staged->data(), to.size());
      return {};
    }
    if (cudaError_t error = cudaMemcpy(to.data(), data, to.size(), cudaMemcpyDeviceToHost); error != cudaSuccess) {
      return Error({RunFailure::context_lost,
                    "copying " + std::to_string(to.size()) + " bytes back from the device: " + describe(error)});
    }
    return {};
  }

  std::expected<void, RunError> before_call() override {
    cudaSetDevice(m_index);  // an earlier call may have made another device current
    // The copies and the poison are finished before the clock starts.
    if (cudaError_t error = cudaDeviceSynchronize(); error != cudaSuccess) {
      return Error({RunFailure::context_lost, "the device failed before the call: " + describe(error)});
    }
    // docs/EXPLOITS.md, C8: no access-policy window survives an earlier call (the clock's prepare() drops persisting
    // lines and the limit). A device without persisting L2 refuses this harmlessly; the error is cleared below.
    cudaStreamAttrValue no_window{};
    cudaStreamSetAttribute(m_stream, cudaStreamAttributeAccessPolicyWindow, &no_window);
    // The handle is shared by every call, so settings a call changed (TF32 math, device pointers) are put back.
    if (m_cublas != nullptr) {
      cublasSetStream(m_cublas, m_stream);  // which also drops the handle's workspace, so it is given back next
      if (m_cublas_workspace != nullptr) cublasSetWorkspace(m_cublas, m_cublas_workspace, m_cublas_workspace_bytes);
      cublasSetMathMode(m_cublas, CUBLAS_DEFAULT_MATH);
      cublasSetPointerMode(m_cublas, CUBLAS_POINTER_MODE_HOST);
      cublasSetAtomicsMode(m_cublas, CUBLAS_ATOMICS_NOT_ALLOWED);
    }
    // The candidate is judged on the errors it makes itself.
    cudaGetLastError();
    m_pending = cudaSuccess;
    return {};
  }

  CallOutcome after_call() override {
    cudaSetDevice(m_index);
    // Device-wide, so work queued on streams of the candidate's own is waited for and judged too (docs/EXPLOITS.md,
    // C1).
    cudaError_t synced = cudaDeviceSynchronize();
    cudaError_t last = cudaGetLastError();
    cudaError_t error = synced != cudaSuccess ? synced : m_pending != cudaSuccess ? m_pending : last;
    if (error == cudaSuccess) return {};
    // A launch error is cleared by cudaGetLastError; a sticky one comes back from every later call.
    return {describe(error), cudaDeviceSynchronize() != cudaSuccess};
  }

  CallClock& clock() override { return m_timed; }

  void* scratch(size_t bytes) override {
    // Clearing cudaMalloc's error below must not also clear a launch error the candidate made before asking.
    if (cudaError_t earlier = cudaGetLastError(); earlier != cudaSuccess && m_pending == cudaSuccess) {
      m_pending = earlier;
    }
    void* data = nullptr;
    cudaError_t error = cudaMalloc(&data, std::max<size_t>(bytes, 1));
    cudaGetLastError();
    if (error != cudaSuccess) return nullptr;
    // 0xFF bytes are a NaN in every float dtype (docs/EXPLOITS.md, B1); queued on the call's stream, before the work
    // that uses the scratch.
    cudaMemsetAsync(data, 0xFF, bytes, m_stream);
    m_scratch.push_back(data);
    return data;
  }

  void end_call() override {
    for (void* data : m_scratch) cudaFree(data);
    m_scratch.clear();
    m_file_hashes.clear();
    // Kept until the end, so that no later buffer can have their addresses.
    m_retired.insert(m_retired.end(), m_call.begin(), m_call.end());
    m_call.clear();
  }

 private:
  std::expected<void*, RunError> fresh_copy(std::span<const uint8_t> contents, const std::string& what) {
    auto data = fresh(contents.size(), what);
    if (!data) return Error(data.error());
    if (contents.empty()) return *data;
    if (cudaError_t error = cudaMemcpy(*data, contents.data(), contents.size(), cudaMemcpyHostToDevice);
        error != cudaSuccess) {
      return Error({RunFailure::context_lost, "copying " + what + " to the device: " + describe(error)});
    }
    return *data;
  }

  // A buffer at an address no earlier call was handed. Earlier calls' buffers stay allocated, which makes their
  // addresses unavailable; when memory runs out they are freed, and a reused address is held while asking again.
  std::expected<void*, RunError> fresh(size_t bytes, const std::string& what) {
    std::vector<void*> held;
    auto release_held = [&] {
      for (void* data : held) cudaFree(data);
    };
    for (int attempt = 0; attempt < k_fresh_attempts; ++attempt) {
      void* data = nullptr;
      cudaError_t error = cudaMalloc(&data, std::max<size_t>(bytes, 1));
      if (error == cudaErrorMemoryAllocation && !m_retired.empty()) {
        cudaGetLastError();
        free_retired();
        continue;
      }
      if (error != cudaSuccess) {
        cudaGetLastError();
        release_held();
        return Error({RunFailure::io_error,
                      "cudaMalloc of " + std::to_string(bytes) + " bytes for " + what + ": " + describe(error)});
      }
      if (m_seen.insert(reinterpret_cast<uintptr_t>(data)).second) {
        release_held();
        m_call.push_back(data);
        return data;
      }
      held.push_back(data);
    }
    release_held();
    return Error({RunFailure::io_error,
                  "no fresh device address for " + what + " after " + std::to_string(k_fresh_attempts) + " tries"});
  }

  // Into pinned memory kept across calls: a fresh pageable buffer each call costs page faults and a staged copy.
  // Where that much cannot be pinned, into pageable memory, as before. Valid until the next stage().
  std::expected<std::span<const uint8_t>, RunError> stage(const void* data, size_t bytes) {
    if (bytes == 0) return std::span<const uint8_t>();
    if (bytes > m_staging_bytes && bytes > m_pageable.size()) {
      cudaFreeHost(m_staging);
      m_staging = nullptr;
      m_staging_bytes = 0;
      if (cudaMallocHost(&m_staging, bytes) == cudaSuccess) {
        m_staging_bytes = bytes;
      } else {
        cudaGetLastError();
        m_staging = nullptr;
        m_pageable.resize(bytes);
      }
    }
    void* host = bytes <= m_staging_bytes ? m_staging : m_pageable.data();
    if (cudaError_t error = cudaMemcpy(host, data, bytes, cudaMemcpyDeviceToHost); error != cudaSuccess) {
      return Error({RunFailure::context_lost,
                    "copying " + std::to_string(bytes) + " bytes back from the device: " + describe(error)});
    }
    return std::span<const uint8_t>(static_cast<const uint8_t*>(host), bytes);
  }

  // Whether `host` lies in memory registered with the driver (the output region once pinned): a DMA can land there.
  static bool page_locked(const void* host) {
    cudaPointerAttributes attributes{};
    if (cudaPointerGetAttributes(&attributes, host) != cudaSuccess) {
      cudaGetLastError();
      return false;
    }
    return attributes.type == cudaMemoryTypeHost;
  }

  void free_retired() {
    for (void* data : m_retired) cudaFree(data);
    m_retired.clear();
  }

  int32_t m_index;
  cudaStream_t m_stream;
  cublasHandle_t m_cublas;
  void* m_cublas_workspace;
  size_t m_cublas_workspace_bytes;
  cudaError_t m_pending = cudaSuccess;  // a launch error seen while handing out scratch or stopping the clock
  KeepErrorClock m_timed;
  std::unordered_set<uintptr_t> m_seen;
  std::vector<void*> m_call;                                // this call's inputs and outputs
  std::vector<void*> m_retired;                             // earlier calls' inputs and outputs
  std::vector<void*> m_scratch;                             // this call's workspace
  std::unordered_map<const void*, uint64_t> m_file_hashes;  // this call's file-init inputs, as copied
  void* m_staging = nullptr;                                // pinned host memory for stage()
  size_t m_staging_bytes = 0;
  std::vector<uint8_t> m_pageable;  // stage()'s fallback when pinning fails
};

}  // namespace

std::expected<std::unique_ptr<Device>, RunError> make_cuda_device(int32_t device_index) {
  int count = 0;
  if (cudaError_t error = cudaGetDeviceCount(&count); error != cudaSuccess) {
    return Error({RunFailure::no_device, "no usable CUDA device: " + describe(error)});
  }
  if (device_index >= count) {
    return Error({RunFailure::no_device, "request.device_index: " + std::to_string(device_index) +
                                             ", but this process sees " + std::to_string(count) + " CUDA device(s)"});
  }
  // cudaFree(NULL) makes the context now, so its cost and its failures fall before the first call.
  cudaError_t error = cudaSetDevice(device_index);
  if (error == cudaSuccess) error = cudaFree(nullptr);
  cudaStream_t stream = nullptr;
  // A blocking stream: work a candidate puts on the legacy default stream stays ordered with it.
  if (error == cudaSuccess) error = cudaStreamCreate(&stream);
  if (error != cudaSuccess) {
    return Error({RunFailure::no_device, "CUDA device " + std::to_string(device_index) + ": " + describe(error)});
  }
  // Without cuBLAS ctx->cublas is NULL, as the ABI allows.
  cublasHandle_t cublas = nullptr;
  if (cublasCreate(&cublas) != CUBLAS_STATUS_SUCCESS) cublas = nullptr;
  // The workspace PyTorch gives its handles (NVIDIA's recommendation: 32 MiB on Hopper and later, else 4 MiB), so a
  // candidate's cuBLAS calls may pick the same kernels as the eager baseline's; without one, cuBLAS falls back to a
  // small default pool.
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
  cudaDeviceProp properties{};
  if (cublas != nullptr && cudaGetDeviceProperties(&properties, device_index) == cudaSuccess) {
    workspace_bytes = size_t(properties.major >= 9 ? 32 : 4) << 20;
    if (cudaMalloc(&workspace, workspace_bytes) != cudaSuccess) workspace = nullptr;
  }
  cudaGetLastError();
  auto clock = make_cuda_clock(device_index, stream);
  if (!clock) return Error({RunFailure::no_device, clock.error()});
  return std::make_unique<CudaDevice>(device_index, stream, cublas, workspace, workspace_bytes, std::move(*clock));
}

int cuda_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) count = 0;
  cudaGetLastError();
  return count;
}

}  // namespace ca

#else  // no CUDA toolkit at build time

namespace ca {

std::expected<std::unique_ptr<Device>, RunError> make_cuda_device(int32_t) {
  return std::unexpected(RunError{RunFailure::bad_request,
                                  "request.backend: cuda is unavailable: this ca-runner was built without the CUDA "
                                  "toolkit; it runs cpu candidates only"});
}

int cuda_device_count() {
  return 0;
}

}  // namespace ca

#endif
