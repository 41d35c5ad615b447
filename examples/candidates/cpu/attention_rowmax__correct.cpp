// Correct causal scaled_dot_product_attention (scale 1/sqrt(E), top-left causal mask) then max over the last dim (values only), OpenMP over (batch, head, query row). Expected verdict: PASS.
#include "ca_kernel.h"

#include <algorithm>
#include <cmath>
#include <omp.h>
#include <vector>

static bool is_f32(const ca_tensor& t, int ndim) {
  return t.data != nullptr && t.dtype == CA_FLOAT32 && t.ndim == ndim && t.shape != nullptr;
}

extern "C" int ca_forward(ca_context* ctx, const ca_tensor* inputs, int n_inputs, ca_tensor* outputs, int n_outputs) {
  if (inputs == nullptr || outputs == nullptr || n_inputs != 3 || n_outputs != 1) return 1;
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

  const float* q = static_cast<const float*>(Q.data);
  const float* k = static_cast<const float*>(K.data);
  const float* v = static_cast<const float*>(V.data);
  float* m = static_cast<float*>(M.data);
  const float scale = 1.0f / std::sqrt(static_cast<float>(E));
  const int threads = (ctx != nullptr && ctx->num_threads > 0) ? ctx->num_threads : omp_get_max_threads();

#pragma omp parallel num_threads(threads)
  {
    std::vector<float> p(static_cast<size_t>(S));
    std::vector<float> o(static_cast<size_t>(Ev));
#pragma omp for collapse(2) schedule(static)
    for (int64_t bh = 0; bh < B * H; ++bh) {
      for (int64_t i = 0; i < L; ++i) {
        const float* qi = q + (bh * L + i) * E;
        const float* kb = k + bh * S * E;
        const float* vb = v + bh * S * Ev;
        const int64_t last = std::min(i, S - 1);  // causal: key j is visible when j <= i
        float mx = -INFINITY;
        for (int64_t j = 0; j <= last; ++j) {
          const float* kj = kb + j * E;
          float s = 0.0f;
          for (int64_t e = 0; e < E; ++e) s += qi[e] * kj[e];
          s *= scale;
          p[j] = s;
          mx = std::max(mx, s);
        }
        float sum = 0.0f;
        for (int64_t j = 0; j <= last; ++j) {
          p[j] = std::exp(p[j] - mx);
          sum += p[j];
        }
        std::fill(o.begin(), o.end(), 0.0f);
        for (int64_t j = 0; j <= last; ++j) {
          const float pj = p[j] / sum;
          const float* vj = vb + j * Ev;
#pragma omp simd
          for (int64_t e = 0; e < Ev; ++e) o[e] += pj * vj[e];
        }
        float best = o[0];
        for (int64_t e = 1; e < Ev; ++e) best = std::max(best, o[e]);
        m[bh * L + i] = best;
      }
    }
  }
  return 0;
}
