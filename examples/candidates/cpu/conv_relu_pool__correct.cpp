// Correct conv2d (stride 1, padding 1, NCHW, with bias) + relu + max_pool2d(2, stride 2), direct convolution, OpenMP over (n, out channel). Expected verdict: PASS.
#include "ca_kernel.h"

#include <algorithm>
#include <omp.h>
#include <vector>

static bool is_f32(const ca_tensor& t, int ndim) {
  return t.data != nullptr && t.dtype == CA_FLOAT32 && t.ndim == ndim && t.shape != nullptr;
}

extern "C" int ca_forward(ca_context* ctx, const ca_tensor* inputs, int n_inputs, ca_tensor* outputs, int n_outputs) {
  if (inputs == nullptr || outputs == nullptr || n_inputs != 3 || n_outputs != 1) return 1;
  const ca_tensor& X = inputs[0];
  const ca_tensor& W = inputs[1];
  const ca_tensor& B = inputs[2];
  const ca_tensor& P = outputs[0];
  if (!is_f32(X, 4) || !is_f32(W, 4) || !is_f32(B, 1) || !is_f32(P, 4)) return 2;
  const int64_t N = X.shape[0], C = X.shape[1], H = X.shape[2], Wd = X.shape[3];
  const int64_t O = W.shape[0], KH = W.shape[2], KW = W.shape[3];
  constexpr int64_t pad = 1;
  const int64_t OH = H + 2 * pad - KH + 1, OW = Wd + 2 * pad - KW + 1;  // stride 1
  const int64_t PH = OH / 2, PW = OW / 2;                                  // kernel 2, stride 2, floor
  if (W.shape[1] != C || B.shape[0] != O || OH < 1 || OW < 1) return 3;
  if (P.shape[0] != N || P.shape[1] != O || P.shape[2] != PH || P.shape[3] != PW) return 3;

  const float* x = static_cast<const float*>(X.data);
  const float* w = static_cast<const float*>(W.data);
  const float* b = static_cast<const float*>(B.data);
  float* p = static_cast<float*>(P.data);
  const int threads = (ctx != nullptr && ctx->num_threads > 0) ? ctx->num_threads : omp_get_max_threads();

#pragma omp parallel num_threads(threads)
  {
    std::vector<float> plane(static_cast<size_t>(OH * OW));
#pragma omp for collapse(2) schedule(static)
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t o = 0; o < O; ++o) {
        std::fill(plane.begin(), plane.end(), b[o]);
        for (int64_t c = 0; c < C; ++c) {
          const float* xc = x + (n * C + c) * H * Wd;
          const float* wk = w + (o * C + c) * KH * KW;
          for (int64_t kh = 0; kh < KH; ++kh) {
            for (int64_t kw = 0; kw < KW; ++kw) {
              const float wv = wk[kh * KW + kw];
              // Output (oh, ow) reads input (oh + kh - pad, ow + kw - pad); keep it inside the image.
              const int64_t oh_lo = std::max<int64_t>(0, pad - kh), oh_hi = std::min<int64_t>(OH, H + pad - kh);
              const int64_t ow_lo = std::max<int64_t>(0, pad - kw), ow_hi = std::min<int64_t>(OW, Wd + pad - kw);
              for (int64_t oh = oh_lo; oh < oh_hi; ++oh) {
                const float* xr = xc + (oh + kh - pad) * Wd + (kw - pad);
                float* pr = plane.data() + oh * OW;
#pragma omp simd
                for (int64_t ow = ow_lo; ow < ow_hi; ++ow) pr[ow] += wv * xr[ow];
              }
            }
          }
        }
        float* out = p + (n * O + o) * PH * PW;
        for (int64_t ph = 0; ph < PH; ++ph) {
          for (int64_t pw = 0; pw < PW; ++pw) {
            const float* r0 = plane.data() + (2 * ph) * OW + 2 * pw;
            const float* r1 = r0 + OW;
            float m = std::max(std::max(r0[0], r0[1]), std::max(r1[0], r1[1]));
            out[ph * PW + pw] = m < 0.0f ? 0.0f : m;  // relu then max == max then relu
          }
        }
      }
    }
  }
  return 0;
}
