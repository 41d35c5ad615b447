// The CUDA twin of make_tensor_bytes (tensor_init.h): kernels that draw a seeded tensor straight into device
// memory, and check that a buffer still holds it, running the per-element code of ir/tensor_values.h, so the bytes
// are the host's to the bit. Only in builds with the CUDA toolkit (CA_WITH_CUDA). nvcc compiles the kernels as
// C++17, without the IR: callers pass draw_params(spec) and the element count, and read file inits on the host.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "ir/tensor_values.h"

namespace ca {

/// Queues on `cuda_stream` the kernel that writes the `count` elements of the tensor (params, dtype, seed, stream)
/// to `out`, count * dtype_size(dtype) bytes of device memory of the current device, aligned for the dtype: the
/// bytes make_tensor_bytes gives. Not for file inits. Returns the launch's error (cudaSuccess for count 0).
cudaError_t draw_on_device(const DrawParams& params, DType dtype, uint64_t count, uint64_t seed, uint64_t stream,
                           void* out, cudaStream_t cuda_stream);

/// Queues on `cuda_stream` the kernel that fills `count` elements of `size` bytes (1, 2, 4 or 8) at `out` with the
/// element at `element` (host memory, read before returning). Returns the launch's error (cudaSuccess for count 0).
cudaError_t fill_on_device(void* out, uint64_t count, const void* element, size_t size, cudaStream_t cuda_stream);

/// Sets `differs` to whether any bit of the `count` elements at `data` differs from what draw_on_device writes
/// there. Runs on `cuda_stream` and waits for it; returns the first CUDA error, leaving `differs` as it was.
cudaError_t differs_on_device(const DrawParams& params, DType dtype, uint64_t count, uint64_t seed, uint64_t stream,
                              const void* data, cudaStream_t cuda_stream, bool& differs);

}  // namespace ca
