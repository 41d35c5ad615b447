// The digest kernel (see tensor_digest_cuda.h): every thread sums its words with tensor_digest.h's functions, a
// block adds its threads' sums, and blocks add theirs to two global counters; addition mod 2^64 is associative and
// commutative, so the order atomics land in does not matter and the result is the host's to the bit.
#include "ir/tensor_digest_cuda.h"

#include <algorithm>

namespace ca {
namespace {

constexpr unsigned k_threads = 256;
constexpr unsigned k_warps = k_threads / 32;
// Enough blocks to fill any GPU; larger buffers take several words per thread.
constexpr uint64_t k_max_blocks = uint64_t(1) << 16;

__device__ uint64_t warp_sum(uint64_t value) {
  for (int offset = 16; offset > 0; offset /= 2) value += __shfl_down_sync(0xffffffffu, value, offset);
  return value;
}

__global__ void digest_kernel(const uint8_t* data, uint64_t nbytes, unsigned long long* out) {
  const uint64_t words = nbytes / 8;
  const uint64_t step = uint64_t(gridDim.x) * blockDim.x;
  const uint64_t first = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  DigestSums sums;
  // A tensor's storage is aligned; a view into it (or a caller's odd pointer) may not be, and is read bytewise.
  if (reinterpret_cast<uintptr_t>(data) % 8 == 0) {
    const auto* aligned = reinterpret_cast<const uint64_t*>(data);
    for (uint64_t i = first; i < words; i += step) digest_add_word(sums, aligned[i], i);
  } else {
    for (uint64_t i = first; i < words; i += step) digest_add_word(sums, digest_word_at(data, nbytes, i), i);
  }
  if (first == 0 && nbytes % 8 != 0) digest_add_word(sums, digest_word_at(data, nbytes, words), words);

  __shared__ uint64_t partial_a[k_warps], partial_b[k_warps];
  const uint64_t a = warp_sum(sums.a), b = warp_sum(sums.b);
  if (threadIdx.x % 32 == 0) {
    partial_a[threadIdx.x / 32] = a;
    partial_b[threadIdx.x / 32] = b;
  }
  __syncthreads();
  if (threadIdx.x != 0) return;
  uint64_t block_a = 0, block_b = 0;
  for (unsigned w = 0; w < k_warps; ++w) {
    block_a += partial_a[w];
    block_b += partial_b[w];
  }
  atomicAdd(&out[0], static_cast<unsigned long long>(block_a));
  atomicAdd(&out[1], static_cast<unsigned long long>(block_b));
}

// Zeroes `counters`, sums into them and copies them back to `host`, all on `cuda_stream`, then waits.
cudaError_t digest_into(const void* data, uint64_t nbytes, cudaStream_t cuda_stream, unsigned long long* counters,
                        unsigned long long (&host)[2]) {
  if (cudaError_t error = cudaMemsetAsync(counters, 0, 2 * sizeof *counters, cuda_stream); error != cudaSuccess) {
    return error;
  }
  const uint64_t words = (nbytes + 7) / 8;
  const auto blocks = unsigned(std::min<uint64_t>((words + k_threads - 1) / k_threads, k_max_blocks));
  digest_kernel<<<std::max(blocks, 1u), k_threads, 0, cuda_stream>>>(static_cast<const uint8_t*>(data), nbytes,
                                                                     counters);
  if (cudaError_t error = cudaGetLastError(); error != cudaSuccess) return error;
  if (cudaError_t error = cudaMemcpyAsync(host, counters, sizeof host, cudaMemcpyDeviceToHost, cuda_stream);
      error != cudaSuccess) {
    return error;
  }
  return cudaStreamSynchronize(cuda_stream);
}

}  // namespace

cudaError_t digest_on_device(const void* data, uint64_t nbytes, cudaStream_t cuda_stream, DigestSums& sums) {
  if (nbytes == 0) {
    sums = DigestSums();
    return cudaSuccess;
  }
  unsigned long long* counters = nullptr;
  if (cudaError_t error = cudaMalloc(&counters, 2 * sizeof *counters); error != cudaSuccess) return error;
  unsigned long long host[2] = {0, 0};
  cudaError_t error = digest_into(data, nbytes, cuda_stream, counters, host);
  cudaFree(counters);
  if (error != cudaSuccess) return error;
  sums.a = host[0];
  sums.b = host[1];
  return cudaSuccess;
}

}  // namespace ca
