// Broken softmax + cumsum: no max subtraction and inputs scaled by 100, so exp overflows to inf and inf/inf gives NaN. Expected verdict: FAIL at compare (NaN).
#include "ca_kernel.h"

#include <cmath>
#include <omp.h>

static bool is_f32(const ca_tensor& t, int ndim) {
  return t.data != nullptr && t.dtype == CA_FLOAT32 && t.ndim == ndim && t.shape != nullptr;
}

extern "C" int ca_forward(ca_context* ctx, const ca_tensor* inputs, int n_inputs, ca_tensor* outputs, int n_outputs) {
  if (inputs == nullptr || outputs == nullptr || n_inputs != 1 || n_outputs != 1) return 1;
  const ca_tensor& X = inputs[0];
  const ca_tensor& Y = outputs[0];
  if (!is_f32(X, 2) || !is_f32(Y, 2)) return 2;
  const int64_t R = X.shape[0], C = X.shape[1];
  if (Y.shape[0] != R || Y.shape[1] != C) return 3;

  const float* x = static_cast<const float*>(X.data);
  float* y = static_cast<float*>(Y.data);
  const int threads = (ctx != nullptr && ctx->num_threads > 0) ? ctx->num_threads : omp_get_max_threads();
#pragma omp parallel for schedule(static) num_threads(threads)
  for (int64_t r = 0; r < R; ++r) {
    const float* xr = x + r * C;
    float* yr = y + r * C;
    float sum = 0.0f;
    for (int64_t c = 0; c < C; ++c) {
      const float e = std::exp(100.0f * xr[c]);  // BUG: no max subtraction, and a bogus x100 scale: overflows to inf
      yr[c] = e;
      sum += e;
    }
    float run = 0.0f;
    for (int64_t c = 0; c < C; ++c) {
      run += yr[c] / sum;  // inf / inf = NaN
      yr[c] = run;
    }
  }
  return 0;
}
