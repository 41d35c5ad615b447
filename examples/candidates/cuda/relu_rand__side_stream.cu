// Relu launched on a stream the candidate creates, returning before it finishes (exploit C1): events on ctx->stream would not see this work, so the static check refuses the stream's creation. Expected verdict: static.
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

__global__ void relu_kernel(const float* x, float* y, int64_t n) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) {
    const float v = x[i];
    y[i] = v < 0.0f ? 0.0f : v;
  }
}

extern "C" int ca_forward(ca_context* ctx, const ca_tensor* inputs, int n_inputs, ca_tensor* outputs, int n_outputs) {
  int64_t n = 0;
  if (ctx == nullptr || !check_args(inputs, n_inputs, outputs, n_outputs, &n)) return 1;
  if (n == 0) return 0;
  // CHEAT: a non-blocking stream of its own, so events recorded on ctx->stream would not see this work.
  cudaStream_t side = nullptr;
  if (cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking) != cudaSuccess) return 2;
  const int threads = 256;
  relu_kernel<<<static_cast<unsigned>((n + threads - 1) / threads), threads, 0, side>>>(
      static_cast<const float*>(inputs[0].data), static_cast<float*>(outputs[0].data), n);
  cudaError_t error = cudaGetLastError();
  cudaStreamDestroy(side);  // returns at once; the stream is released once its work is done
  return error == cudaSuccess ? 0 : 2;
}
