// take GIB: allocates GIB GiB on the device and touches all of it; tests/gpu/device_memory_share.sh runs it in the
// sandbox under a device-memory share. Plain CUDA rather than PyTorch: the sandbox shows the system's directories
// only, and a GPU machine's torch may live elsewhere (/opt on the device machine).
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
  if (argc != 2) return std::fprintf(stderr, "usage: take_device_memory GIB\n"), 64;
  const size_t bytes = size_t(std::strtoull(argv[1], nullptr, 10)) << 30;
  void* p = nullptr;
  cudaError_t e = cudaMalloc(&p, bytes);
  if (e == cudaSuccess) e = cudaMemset(p, 1, bytes);
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  if (e != cudaSuccess) return std::fprintf(stderr, "%s: %s\n", cudaGetErrorName(e), cudaGetErrorString(e)), 1;
  std::printf("took %s\n", argv[1]);
  return 0;
}
