#include "torch/runtime.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>

#ifdef CA_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#endif

namespace ca {

bool torch_has_cuda() {
  return at::hasCUDA();
}

void set_torch_threads(int threads) {
  at::set_num_threads(threads);
}

void release_cached_device_memory() {
#ifdef CA_WITH_CUDA
  if (at::hasCUDA()) c10::cuda::CUDACachingAllocator::emptyCache();
#endif
}

}  // namespace ca
