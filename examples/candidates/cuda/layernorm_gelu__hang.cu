// Hanging layer_norm + gelu: validates its arguments, then launches a kernel that spins forever on a volatile flag nothing clears; the runner's sync never returns. Expected verdict: FAIL at timeout.
#include <cuda_runtime.h>

#include "ca_kernel.h"

static bool is_f32(const ca_tensor& t) { return t.data != nullptr && t.dtype == CA_FLOAT32 && t.shape != nullptr; }

// The flag lives in global memory: a volatile local is a register to the compiler, and the H200 run showed ptxas
// dropping a loop over one (the kernel returned at once).
__device__ volatile int released = 0;

__global__ void wait_forever(float* y) {
  // BUG: waits for a flag nobody sets. Each volatile global load must happen, so the loop stays.
  while (released == 0) {
  }
  y[threadIdx.x] = 0.0f;
}

extern "C" int ca_forward(ca_context* ctx, const ca_tensor* inputs, int n_inputs, ca_tensor* outputs, int n_outputs) {
  if (ctx == nullptr || inputs == nullptr || outputs == nullptr || n_inputs != 3 || n_outputs != 1) return 1;
  const ca_tensor& X = inputs[0];
  if (!is_f32(X) || !is_f32(inputs[1]) || !is_f32(inputs[2]) || !is_f32(outputs[0])) return 2;
  if (X.ndim < 1 || inputs[1].ndim != 1 || inputs[2].ndim != 1 || outputs[0].ndim != X.ndim) return 2;
  wait_forever<<<1, 32, 0, static_cast<cudaStream_t>(ctx->stream)>>>(static_cast<float*>(outputs[0].data));
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
