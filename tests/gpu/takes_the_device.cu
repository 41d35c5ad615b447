// A correct relu (the example task example/relu_rand) that first takes every byte of device memory it can get and
// as much host RAM as its limits let it touch, and holds both for k_hold_s seconds of its first call, so that jobs
// verified beside it meet a full device. tests/gpu/eight_at_once.sh verifies it with seven example candidates at
// once and checks that they get the verdicts they get alone. Its own verdict depends on its neighbours: alone, its
// later calls find no room for their inputs; beside neighbours that end and free their memory, they may.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "ca_kernel.h"

constexpr double k_hold_s = 6;

__global__ void relu_kernel(const float* x, float* y, int64_t n) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) y[i] = x[i] < 0.0f ? 0.0f : x[i];
}

// Device memory in halving chunks down to 1 MiB, host memory in 64 MiB chunks, each page touched; kept for good.
static void take_everything() {
  static std::vector<void*> taken;
  for (size_t chunk = size_t(1) << 32; chunk >= (size_t(1) << 20);) {
    void* p = nullptr;
    if (cudaMalloc(&p, chunk) == cudaSuccess) {
      cudaMemset(p, 1, chunk);
      taken.push_back(p);
    } else {
      chunk /= 2;
    }
  }
  cudaGetLastError();  // the last refusal is expected, not an error of the call
  for (;;) {
    void* p = std::malloc(size_t(64) << 20);
    if (p == nullptr) break;
    std::memset(p, 1, size_t(64) << 20);
    taken.push_back(p);
  }
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(k_hold_s);
  while (std::chrono::steady_clock::now() < until) {
  }
}

extern "C" int ca_forward(ca_context* ctx, const ca_tensor* inputs, int n_inputs, ca_tensor* outputs, int n_outputs) {
  static bool first = true;
  if (first) take_everything();
  first = false;
  if (ctx == nullptr || n_inputs != 1 || n_outputs != 1 || inputs[0].ndim != 2) return 1;
  const int64_t n = inputs[0].shape[0] * inputs[0].shape[1];
  relu_kernel<<<static_cast<unsigned>((n + 255) / 256), 256, 0, static_cast<cudaStream_t>(ctx->stream)>>>(
      static_cast<const float*>(inputs[0].data), static_cast<float*>(outputs[0].data), n);
  return cudaGetLastError() == cudaSuccess ? 0 : 2;
}
