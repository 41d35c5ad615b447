// The hold kernel (see hold_cuda.h).
#include "timing/hold_cuda.h"

namespace ca {
namespace {

constexpr int k_threads = 256;

__device__ uint64_t global_ns() {
  uint64_t now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  return now;
}

// At most 32 registers a thread (65536 / 2048), so that 2048 threads fit on an SM at once.
__global__ void __launch_bounds__(k_threads, 8) hold_kernel(uint64_t nanoseconds) {
  const uint64_t start = global_ns();
  while (global_ns() - start < nanoseconds) __nanosleep(500);  // a sleeping warp still holds its slot
}

}  // namespace

void hold_device(cudaStream_t stream, uint32_t nanoseconds, int sms, int threads_per_sm) {
  const unsigned blocks = unsigned(sms) * unsigned((threads_per_sm + k_threads - 1) / k_threads);
  hold_kernel<<<blocks, k_threads, 0, stream>>>(nanoseconds);
}

}  // namespace ca
