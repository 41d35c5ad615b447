// Cheating relu (exploit B4): copies x to y with a kernel of its own (a cudaMemcpy alone would fail at launch, docs/EXPLOITS.md A2), which is right only when every x >= 0 (the task's rand init is [0, 1)). Expected verdict: FAIL at compare (on signed-input trials).
#include <cuda_runtime.h>

#include "ca_kernel.h"

static bool is_f32(const ca_tensor& t, int ndim) {
  return t.data != nullptr && t.dtype == CA_FLOAT32 && t.ndim == ndim && t.shape != nullptr;
}

// Validates relu's arguments: one 2-D float32 input, one output of the same shape. Sets *n to the element count.
static bool check_args(const ca_tensor* inputs, int n_inputs, const ca_tensor* outputs, int n_outputs, int64_t* n) {
  if (inputs == nullptr || outputs == nullptr || n_inputs != 1 || n_outputs != 1) return false;
  const ca_tensor& X = inputs[0];
  const ca_tensor& Y = outputs[0];
  if (!is_f32(X, 2) || !is_f32(Y, 2)) return false;
  if (Y.shape[0] != X.shape[0] || Y.shape[1] != X.shape[1]) return false;
  *n = X.shape[0] * X.shape[1];
  return true;
}

__global__ void copy(const float* x, float* y, int64_t n) {
  int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i];  // BUG: no max(x, 0)
}

extern "C" int ca_forward(ca_context* ctx, const ca_tensor* inputs, int n_inputs, ca_tensor* outputs, int n_outputs) {
  int64_t n = 0;
  if (ctx == nullptr || !check_args(inputs, n_inputs, outputs, n_outputs, &n)) return 1;
  const int threads = 256;
  const auto blocks = static_cast<unsigned>((n + threads - 1) / threads);
  copy<<<blocks, threads, 0, static_cast<cudaStream_t>(ctx->stream)>>>(static_cast<const float*>(inputs[0].data),
                                                                       static_cast<float*>(outputs[0].data), n);
  return cudaGetLastError() == cudaSuccess ? 0 : 2;
}
