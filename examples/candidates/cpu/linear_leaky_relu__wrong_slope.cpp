// Wrong linear + leaky_relu: uses negative slope 0.2 instead of 0.1, so every negative output is off by 2x. Expected verdict: FAIL at compare.
#include "ca_kernel.h"

#include <omp.h>

static bool is_f32(const ca_tensor& t, int ndim) {
  return t.data != nullptr && t.dtype == CA_FLOAT32 && t.ndim == ndim && t.shape != nullptr;
}

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
#pragma omp parallel for collapse(2) num_threads(threads)
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) {
      float s = 0.0f;
      for (int64_t k = 0; k < K; ++k) s += x[i * K + k] * w[j * K + k];
      y[i * N + j] = s < 0.0f ? 0.2f * s : s;  // BUG: the task's slope is 0.1
    }
  }
  return 0;
}
