// Correct layer_norm over the last dim (biased variance, eps 1e-5, weight and bias) then tanh-approximate gelu: one 256-thread block per row with block-wide sums. Expected verdict: PASS.
#include <cuda_runtime.h>

#include "ca_kernel.h"

constexpr int k_threads = 256;  // a multiple of 32: whole warps

static bool is_f32(const ca_tensor& t) { return t.data != nullptr && t.dtype == CA_FLOAT32 && t.shape != nullptr; }

__device__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// The sum of v over the block, returned to every thread.
__device__ float block_sum(float v) {
  __shared__ float partial[32];
  __shared__ float total;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  v = warp_sum(v);
  __syncthreads();  // an earlier call may still be reading partial
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    float w = lane < warps ? partial[lane] : 0.0f;
    w = warp_sum(w);
    if (lane == 0) total = w;
  }
  __syncthreads();
  return total;
}

__global__ void layernorm_gelu(const float* x, const float* gamma, const float* beta, float* y, int64_t cols, float eps) {
  const float* xr = x + blockIdx.x * cols;
  float* yr = y + blockIdx.x * cols;
  float sum = 0.0f;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) sum += xr[j];
  const float mean = block_sum(sum) / static_cast<float>(cols);
  float squares = 0.0f;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    const float d = xr[j] - mean;
    squares += d * d;
  }
  const float rstd = rsqrtf(block_sum(squares) / static_cast<float>(cols) + eps);
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    const float n = (xr[j] - mean) * rstd * gamma[j] + beta[j];
    const float inner = 0.7978845608028654f * (n + 0.044715f * n * n * n);  // sqrt(2/pi)
    yr[j] = 0.5f * n * (1.0f + tanhf(inner));
  }
}

extern "C" int ca_forward(ca_context* ctx, const ca_tensor* inputs, int n_inputs, ca_tensor* outputs, int n_outputs) {
  if (ctx == nullptr || inputs == nullptr || outputs == nullptr || n_inputs != 3 || n_outputs != 1) return 1;
  const ca_tensor& X = inputs[0];
  const ca_tensor& G = inputs[1];
  const ca_tensor& B = inputs[2];
  const ca_tensor& Y = outputs[0];
  if (!is_f32(X) || !is_f32(G) || !is_f32(B) || !is_f32(Y)) return 2;
  if (X.ndim < 1 || G.ndim != 1 || B.ndim != 1 || Y.ndim != X.ndim) return 2;
  const int64_t cols = X.shape[X.ndim - 1];
  if (G.shape[0] != cols || B.shape[0] != cols) return 3;
  int64_t rows = 1;
  for (int i = 0; i < X.ndim; ++i) {
    if (Y.shape[i] != X.shape[i]) return 3;
    if (i + 1 < X.ndim) rows *= X.shape[i];
  }
  if (rows == 0 || cols == 0) return 0;
  layernorm_gelu<<<static_cast<unsigned>(rows), k_threads, 0, static_cast<cudaStream_t>(ctx->stream)>>>(
      static_cast<const float*>(X.data), static_cast<const float*>(G.data), static_cast<const float*>(B.data),
      static_cast<float*>(Y.data), cols, 1e-5f);
  return cudaGetLastError() == cudaSuccess ? 0 : 4;
}
