// Correct softmax over the last dim then cumsum along it: one 1024-thread block per row, each thread a contiguous chunk, with block-wide max, sum and exclusive scan. Expected verdict: PASS.
#include <cuda_runtime.h>

#include "ca_kernel.h"

constexpr int k_threads = 1024;  // a multiple of 32: whole warps

static bool is_f32(const ca_tensor& t, int ndim) {
  return t.data != nullptr && t.dtype == CA_FLOAT32 && t.ndim == ndim && t.shape != nullptr;
}

__device__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

__device__ float warp_max(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// The sum (or max) of v over the block, returned to every thread.
template <bool Max>
__device__ float block_reduce(float v) {
  __shared__ float partial[32];
  __shared__ float total;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  v = Max ? warp_max(v) : warp_sum(v);
  __syncthreads();  // an earlier call may still be reading partial
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    float w = lane < warps ? partial[lane] : (Max ? -INFINITY : 0.0f);
    w = Max ? warp_max(w) : warp_sum(w);
    if (lane == 0) total = w;
  }
  __syncthreads();
  return total;
}

// The sum of v over the threads before this one.
__device__ float block_exclusive_scan(float v) {
  __shared__ float warp_totals[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  float inclusive = v;
  for (int offset = 1; offset < 32; offset <<= 1) {
    const float other = __shfl_up_sync(0xffffffffu, inclusive, offset);
    if (lane >= offset) inclusive += other;
  }
  __syncthreads();
  if (lane == 31) warp_totals[warp] = inclusive;
  __syncthreads();
  if (warp == 0) {
    float t = lane < warps ? warp_totals[lane] : 0.0f;
    for (int offset = 1; offset < 32; offset <<= 1) {
      const float other = __shfl_up_sync(0xffffffffu, t, offset);
      if (lane >= offset) t += other;
    }
    if (lane < warps) warp_totals[lane] = t;  // inclusive over warps
  }
  __syncthreads();
  const float before_warp = warp == 0 ? 0.0f : warp_totals[warp - 1];
  return before_warp + inclusive - v;
}

__global__ void softmax_cumsum(const float* x, float* y, int64_t cols) {
  const float* xr = x + blockIdx.x * cols;
  float* yr = y + blockIdx.x * cols;
  const int64_t per = (cols + blockDim.x - 1) / blockDim.x;
  const int64_t begin = threadIdx.x * per;
  const int64_t end = begin + per < cols ? begin + per : cols;

  float m = -INFINITY;
  for (int64_t j = begin; j < end; ++j) m = fmaxf(m, xr[j]);
  m = block_reduce<true>(m);
  float local = 0.0f;
  for (int64_t j = begin; j < end; ++j) local += expf(xr[j] - m);
  const float total = block_reduce<false>(local);
  float running = block_exclusive_scan(local);
  const float inv = 1.0f / total;
  for (int64_t j = begin; j < end; ++j) {
    running += expf(xr[j] - m);
    yr[j] = running * inv;
  }
}

extern "C" int ca_forward(ca_context* ctx, const ca_tensor* inputs, int n_inputs, ca_tensor* outputs, int n_outputs) {
  if (ctx == nullptr || inputs == nullptr || outputs == nullptr || n_inputs != 1 || n_outputs != 1) return 1;
  const ca_tensor& X = inputs[0];
  const ca_tensor& Y = outputs[0];
  if (!is_f32(X, 2) || !is_f32(Y, 2) || Y.shape[0] != X.shape[0] || Y.shape[1] != X.shape[1]) return 2;
  const int64_t rows = X.shape[0], cols = X.shape[1];
  if (rows == 0 || cols == 0) return 0;
  softmax_cumsum<<<static_cast<unsigned>(rows), k_threads, 0, static_cast<cudaStream_t>(ctx->stream)>>>(
      static_cast<const float*>(X.data), static_cast<float*>(Y.data), cols);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
