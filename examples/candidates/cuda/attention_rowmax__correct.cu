// Correct causal scaled_dot_product_attention (scale 1/sqrt(E), top-left causal mask) then max over the last dim (values only): one block per (batch, head, query row), scores in shared memory. Expected verdict: PASS.
#include <cuda_runtime.h>

#include "ca_kernel.h"

constexpr int k_threads = 128;  // a multiple of 32: whole warps

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

// Dynamic shared memory: E floats of the query row, then S floats of scores.
__global__ void attention_rowmax(const float* q, const float* k, const float* v, float* m, int64_t L, int64_t S, int64_t E,
                                 int64_t Ev, float scale) {
  extern __shared__ float shared[];
  float* qi = shared;
  float* p = shared + E;
  const int64_t row = blockIdx.x;  // (batch * head) * L + i
  const int64_t bh = row / L, i = row % L;
  const float* qrow = q + row * E;
  const float* kb = k + bh * S * E;
  const float* vb = v + bh * S * Ev;
  for (int64_t e = threadIdx.x; e < E; e += blockDim.x) qi[e] = qrow[e];
  __syncthreads();
  const int64_t last = i < S - 1 ? i : S - 1;  // causal: key j is visible when j <= i
  float local_max = -INFINITY;
  for (int64_t j = threadIdx.x; j <= last; j += blockDim.x) {
    const float* kj = kb + j * E;
    float s = 0.0f;
    for (int64_t e = 0; e < E; ++e) s += qi[e] * kj[e];
    s *= scale;
    p[j] = s;
    local_max = fmaxf(local_max, s);
  }
  const float mx = block_reduce<true>(local_max);
  float local_sum = 0.0f;
  for (int64_t j = threadIdx.x; j <= last; j += blockDim.x) {
    p[j] = expf(p[j] - mx);
    local_sum += p[j];
  }
  const float inv = 1.0f / block_reduce<false>(local_sum);  // its barriers also publish p
  float best = -INFINITY;
  for (int64_t d = threadIdx.x; d < Ev; d += blockDim.x) {
    float o = 0.0f;
    for (int64_t j = 0; j <= last; ++j) o += p[j] * vb[j * Ev + d];
    best = fmaxf(best, o * inv);
  }
  best = block_reduce<true>(best);
  if (threadIdx.x == 0) m[row] = best;
}

extern "C" int ca_forward(ca_context* ctx, const ca_tensor* inputs, int n_inputs, ca_tensor* outputs, int n_outputs) {
  if (ctx == nullptr || inputs == nullptr || outputs == nullptr || n_inputs != 3 || n_outputs != 1) return 1;
  const ca_tensor& Q = inputs[0];
  const ca_tensor& K = inputs[1];
  const ca_tensor& V = inputs[2];
  const ca_tensor& M = outputs[0];
  if (!is_f32(Q, 4) || !is_f32(K, 4) || !is_f32(V, 4) || !is_f32(M, 3)) return 2;
  const int64_t B = Q.shape[0], H = Q.shape[1], L = Q.shape[2], E = Q.shape[3];
  const int64_t S = K.shape[2], Ev = V.shape[3];
  if (K.shape[0] != B || K.shape[1] != H || K.shape[3] != E) return 3;
  if (V.shape[0] != B || V.shape[1] != H || V.shape[2] != S) return 3;
  if (M.shape[0] != B || M.shape[1] != H || M.shape[2] != L) return 3;
  if (S < 1 || E < 1 || Ev < 1) return 3;
  const size_t shared_bytes = static_cast<size_t>(E + S) * sizeof(float);
  if (shared_bytes > 48 * 1024) return 4;  // the default dynamic shared memory limit
  if (B * H * L == 0) return 0;
  attention_rowmax<<<static_cast<unsigned>(B * H * L), k_threads, shared_bytes, static_cast<cudaStream_t>(ctx->stream)>>>(
      static_cast<const float*>(Q.data), static_cast<const float*>(K.data), static_cast<const float*>(V.data),
      static_cast<float*>(M.data), L, S, E, Ev, 1.0f / sqrtf(static_cast<float>(E)));
  return cudaGetLastError() == cudaSuccess ? 0 : 5;
}
