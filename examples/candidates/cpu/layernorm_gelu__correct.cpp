// Correct layer_norm over the last dim (eps 1e-5, biased variance, affine g, b) + gelu(approximate='tanh'), OpenMP over rows. Expected verdict: PASS.
#include "ca_kernel.h"

#include <cmath>
#include <omp.h>

static bool is_f32(const ca_tensor& t) { return t.data != nullptr && t.dtype == CA_FLOAT32 && t.shape != nullptr; }

extern "C" int ca_forward(ca_context* ctx, const ca_tensor* inputs, int n_inputs, ca_tensor* outputs, int n_outputs) {
  if (inputs == nullptr || outputs == nullptr || n_inputs != 3 || n_outputs != 1) return 1;
  const ca_tensor& X = inputs[0];
  const ca_tensor& G = inputs[1];
  const ca_tensor& B = inputs[2];
  const ca_tensor& Y = outputs[0];
  if (!is_f32(X) || !is_f32(G) || !is_f32(B) || !is_f32(Y)) return 2;
  if (X.ndim < 1 || G.ndim != 1 || B.ndim != 1 || Y.ndim != X.ndim) return 2;
  const int64_t D = X.shape[X.ndim - 1];
  if (D < 1 || G.shape[0] != D || B.shape[0] != D) return 3;
  int64_t rows = 1;
  for (int i = 0; i < X.ndim; ++i) {
    if (Y.shape[i] != X.shape[i]) return 3;
    if (i + 1 < X.ndim) rows *= X.shape[i];
  }

  const float* x = static_cast<const float*>(X.data);
  const float* g = static_cast<const float*>(G.data);
  const float* b = static_cast<const float*>(B.data);
  float* y = static_cast<float*>(Y.data);
  const float k = 0.7978845608028654f;  // sqrt(2 / pi)
  const int threads = (ctx != nullptr && ctx->num_threads > 0) ? ctx->num_threads : omp_get_max_threads();
#pragma omp parallel for schedule(static) num_threads(threads)
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * D;
    float* yr = y + r * D;
    double sum = 0.0;
    for (int64_t i = 0; i < D; ++i) sum += xr[i];
    const double mean = sum / D;
    double sq = 0.0;
    for (int64_t i = 0; i < D; ++i) {
      const double d = xr[i] - mean;
      sq += d * d;
    }
    const float rstd = static_cast<float>(1.0 / std::sqrt(sq / D + 1e-5));  // biased variance
    const float m = static_cast<float>(mean);
    for (int64_t i = 0; i < D; ++i) {
      const float n = (xr[i] - m) * rstd * g[i] + b[i];
      yr[i] = 0.5f * n * (1.0f + std::tanh(k * (n + 0.044715f * n * n * n)));
    }
  }
  return 0;
}
