// Partial softmax + cumsum: computes only the first half of the rows and leaves the rest unwritten (still NaN poison). Expected verdict: FAIL at compare.
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
  const int64_t rows_done = R / 2;  // BUG: the second half of the rows is never written
#pragma omp parallel for schedule(static) num_threads(threads)
  for (int64_t r = 0; r < rows_done; ++r) {
    const float* xr = x + r * C;
    float* yr = y + r * C;
    float m = -INFINITY;
    for (int64_t c = 0; c < C; ++c) m = std::fmax(m, xr[c]);
    double sum = 0.0;
    for (int64_t c = 0; c < C; ++c) {
      const float e = std::exp(xr[c] - m);
      yr[c] = e;
      sum += e;
    }
    double run = 0.0;
    for (int64_t c = 0; c < C; ++c) {
      run += yr[c] / sum;
      yr[c] = static_cast<float>(run);
    }
  }
  return 0;
}
