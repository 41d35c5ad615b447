// For the CUDA unit tests, which skip themselves where no GPU can be used (CI, the development machine).
#pragma once

#include <cuda_runtime.h>

namespace ca {

/// Whether this process sees a CUDA device; clears the error asking leaves behind when it does not.
inline bool have_gpu() {
  int count = 0;
  const bool ok = cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
  cudaGetLastError();
  return ok;
}

}  // namespace ca
