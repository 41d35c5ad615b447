// Correct linear (x @ w^T) + leaky_relu(0.1): OpenMP over output tiles, cache-blocked GEMM with a transposed w tile. Expected verdict: PASS.
#include "ca_kernel.h"

#include <algorithm>
#include <omp.h>

namespace {

constexpr int64_t IB = 64;   // rows of x per tile
constexpr int64_t JB = 64;   // rows of w (output columns) per tile
constexpr int64_t KB = 256;  // reduction depth per tile

bool is_f32(const ca_tensor& t, int ndim) {
  return t.data != nullptr && t.dtype == CA_FLOAT32 && t.ndim == ndim && t.shape != nullptr;
}

}  // namespace

extern "C" int ca_forward(ca_context* ctx, const ca_tensor* inputs, int n_inputs, ca_tensor* outputs, int n_outputs) {
  if (inputs == nullptr || outputs == nullptr || n_inputs != 2 || n_outputs != 1) return 1;
  const ca_tensor& X = inputs[0];
  const ca_tensor& W = inputs[1];
  const ca_tensor& Y = outputs[0];
  if (!is_f32(X, 2) || !is_f32(W, 2) || !is_f32(Y, 2)) return 2;
  const int64_t M = X.shape[0], K = X.shape[1], N = W.shape[0];
  if (W.shape[1] != K || Y.shape[0] != M || Y.shape[1] != N) return 3;

  const float* x = static_cast<const float*>(X.data);
  const float* w = static_cast<const float*>(W.data);
  float* y = static_cast<float*>(Y.data);
  const int threads = (ctx != nullptr && ctx->num_threads > 0) ? ctx->num_threads : omp_get_max_threads();
  const int64_t mi = (M + IB - 1) / IB, nj = (N + JB - 1) / JB;

#pragma omp parallel num_threads(threads)
  {
    alignas(64) float wt[KB][JB];   // w tile, transposed: wt[k][j] = w[j0 + j][k0 + k]
    alignas(64) float acc[IB][JB];
#pragma omp for schedule(static)
    for (int64_t tile = 0; tile < mi * nj; ++tile) {
      const int64_t i0 = (tile / nj) * IB, j0 = (tile % nj) * JB;
      const int64_t in = std::min(IB, M - i0), jn = std::min(JB, N - j0);
      for (int64_t i = 0; i < IB; ++i)
        for (int64_t j = 0; j < JB; ++j) acc[i][j] = 0.0f;
      for (int64_t k0 = 0; k0 < K; k0 += KB) {
        const int64_t kn = std::min(KB, K - k0);
        for (int64_t j = 0; j < JB; ++j)
          for (int64_t k = 0; k < kn; ++k) wt[k][j] = j < jn ? w[(j0 + j) * K + k0 + k] : 0.0f;
        for (int64_t i = 0; i < in; ++i) {
          const float* xr = x + (i0 + i) * K + k0;
          float* a = acc[i];
          for (int64_t k = 0; k < kn; ++k) {
            const float xv = xr[k];
            const float* wr = wt[k];
#pragma omp simd
            for (int64_t j = 0; j < JB; ++j) a[j] += xv * wr[j];
          }
        }
      }
      for (int64_t i = 0; i < in; ++i)
        for (int64_t j = 0; j < jn; ++j) {
          const float v = acc[i][j];
          y[(i0 + i) * N + j0 + j] = v < 0.0f ? 0.1f * v : v;
        }
    }
  }
  return 0;
}
