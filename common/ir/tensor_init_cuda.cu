// Kernels of the CUDA twin of make_tensor_bytes (see tensor_init_cuda.h). Compiled with -fmad=false and without
// fast math (common/CMakeLists.txt), as tensor_init.cpp is with -ffp-contract=off, so each element is the same
// sequence of IEEE operations on both.
#include "ir/tensor_init_cuda.h"

#include <algorithm>
#include <cstring>

namespace ca {
namespace {

constexpr unsigned k_threads = 256;
// Enough blocks to fill any GPU; larger tensors take several elements per thread.
constexpr uint64_t k_max_blocks = uint64_t(1) << 16;

unsigned blocks_for(uint64_t count) {
  return unsigned(std::min<uint64_t>((count + k_threads - 1) / k_threads, k_max_blocks));
}

template <typename E>
__global__ void draw_kernel(DrawParams params, uint64_t count, uint64_t seed, uint64_t stream, typename E::type* out) {
  const uint64_t step = uint64_t(gridDim.x) * blockDim.x;
  for (uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += step) {
    out[i] = E::bits(params, seed, stream, i);
  }
}

template <typename T>
__global__ void fill_kernel(T* out, uint64_t count, T value) {
  const uint64_t step = uint64_t(gridDim.x) * blockDim.x;
  for (uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += step) out[i] = value;
}

template <typename T>
cudaError_t fill_with(void* out, uint64_t count, const void* element, cudaStream_t cuda_stream) {
  T value;
  std::memcpy(&value, element, sizeof value);
  fill_kernel<T><<<blocks_for(count), k_threads, 0, cuda_stream>>>(static_cast<T*>(out), count, value);
  return cudaGetLastError();
}

template <typename E>
__global__ void compare_kernel(DrawParams params, uint64_t count, uint64_t seed, uint64_t stream,
                               const typename E::type* data, unsigned* differs) {
  const uint64_t step = uint64_t(gridDim.x) * blockDim.x;
  for (uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += step) {
    if (data[i] != E::bits(params, seed, stream, i)) {
      *differs = 1;
      return;
    }
  }
}

// Zeroes `flag`, compares into it and copies it back to `found`, all on `cuda_stream`, then waits.
cudaError_t compare_into(const DrawParams& params, DType dtype, uint64_t count, uint64_t seed, uint64_t stream,
                         const void* data, cudaStream_t cuda_stream, unsigned* flag, unsigned& found) {
  if (cudaError_t error = cudaMemsetAsync(flag, 0, sizeof *flag, cuda_stream); error != cudaSuccess) return error;
  visit_element(dtype, [&](auto element) {
    using E = decltype(element);
    compare_kernel<E><<<blocks_for(count), k_threads, 0, cuda_stream>>>(
        params, count, seed, stream, static_cast<const typename E::type*>(data), flag);
  });
  if (cudaError_t error = cudaGetLastError(); error != cudaSuccess) return error;
  if (cudaError_t error = cudaMemcpyAsync(&found, flag, sizeof found, cudaMemcpyDeviceToHost, cuda_stream);
      error != cudaSuccess) {
    return error;
  }
  return cudaStreamSynchronize(cuda_stream);
}

}  // namespace

cudaError_t draw_on_device(const DrawParams& params, DType dtype, uint64_t count, uint64_t seed, uint64_t stream,
                           void* out, cudaStream_t cuda_stream) {
  if (count == 0) return cudaSuccess;
  visit_element(dtype, [&](auto element) {
    using E = decltype(element);
    draw_kernel<E><<<blocks_for(count), k_threads, 0, cuda_stream>>>(params, count, seed, stream,
                                                                     static_cast<typename E::type*>(out));
  });
  return cudaGetLastError();
}

cudaError_t fill_on_device(void* out, uint64_t count, const void* element, size_t size, cudaStream_t cuda_stream) {
  if (count == 0) return cudaSuccess;
  switch (size) {
    case 1:
      return fill_with<uint8_t>(out, count, element, cuda_stream);
    case 2:
      return fill_with<uint16_t>(out, count, element, cuda_stream);
    case 4:
      return fill_with<uint32_t>(out, count, element, cuda_stream);
    case 8:
      return fill_with<uint64_t>(out, count, element, cuda_stream);
  }
  return cudaErrorInvalidValue;
}

cudaError_t differs_on_device(const DrawParams& params, DType dtype, uint64_t count, uint64_t seed, uint64_t stream,
                              const void* data, cudaStream_t cuda_stream, bool& differs) {
  if (count == 0) {
    differs = false;
    return cudaSuccess;
  }
  unsigned* flag = nullptr;
  if (cudaError_t error = cudaMalloc(&flag, sizeof *flag); error != cudaSuccess) return error;
  unsigned found = 0;
  cudaError_t error = compare_into(params, dtype, count, seed, stream, data, cuda_stream, flag, found);
  cudaFree(flag);
  if (error == cudaSuccess) differs = found != 0;
  return error;
}

}  // namespace ca
