// Correct conv2d (stride 1, padding 1, with bias) then relu then max_pool2d (2x2, stride 2): a naive direct convolution, one thread per pooled output computing its four conv outputs. Expected verdict: PASS.
#include <cuda_runtime.h>

#include "ca_kernel.h"

static bool is_f32(const ca_tensor& t, int ndim) {
  return t.data != nullptr && t.dtype == CA_FLOAT32 && t.ndim == ndim && t.shape != nullptr;
}

struct Dims {
  int64_t n, c, h, w;      // input
  int64_t o, kh, kw;       // weight
  int64_t ph, pw;          // pooled output
};

__global__ void conv_relu_pool(const float* x, const float* weight, const float* bias, float* y, Dims d) {
  const int64_t index = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (index >= d.n * d.o * d.ph * d.pw) return;
  const int64_t px = index % d.pw, py = (index / d.pw) % d.ph, oc = (index / (d.pw * d.ph)) % d.o, b = index / (d.pw * d.ph * d.o);
  float best = -INFINITY;
  for (int64_t dy = 0; dy < 2; ++dy) {
    for (int64_t dx = 0; dx < 2; ++dx) {
      const int64_t oy = py * 2 + dy, ox = px * 2 + dx;  // conv output position; padding 1
      float acc = bias[oc];
      for (int64_t ic = 0; ic < d.c; ++ic) {
        for (int64_t ky = 0; ky < d.kh; ++ky) {
          const int64_t iy = oy + ky - 1;
          if (iy < 0 || iy >= d.h) continue;
          for (int64_t kx = 0; kx < d.kw; ++kx) {
            const int64_t ix = ox + kx - 1;
            if (ix < 0 || ix >= d.w) continue;
            acc += x[((b * d.c + ic) * d.h + iy) * d.w + ix] * weight[((oc * d.c + ic) * d.kh + ky) * d.kw + kx];
          }
        }
      }
      best = fmaxf(best, fmaxf(acc, 0.0f));
    }
  }
  y[index] = best;
}

extern "C" int ca_forward(ca_context* ctx, const ca_tensor* inputs, int n_inputs, ca_tensor* outputs, int n_outputs) {
  if (ctx == nullptr || inputs == nullptr || outputs == nullptr || n_inputs != 3 || n_outputs != 1) return 1;
  const ca_tensor& X = inputs[0];
  const ca_tensor& Wt = inputs[1];
  const ca_tensor& Bs = inputs[2];
  const ca_tensor& Y = outputs[0];
  if (!is_f32(X, 4) || !is_f32(Wt, 4) || !is_f32(Bs, 1) || !is_f32(Y, 4)) return 2;
  Dims d{X.shape[0], X.shape[1], X.shape[2], X.shape[3], Wt.shape[0], Wt.shape[2], Wt.shape[3], 0, 0};
  if (Wt.shape[1] != d.c || Bs.shape[0] != d.o) return 3;
  const int64_t oh = d.h + 2 - d.kh + 1, ow = d.w + 2 - d.kw + 1;  // conv output, padding 1
  d.ph = oh / 2;
  d.pw = ow / 2;
  if (Y.shape[0] != d.n || Y.shape[1] != d.o || Y.shape[2] != d.ph || Y.shape[3] != d.pw) return 3;
  const int64_t total = d.n * d.o * d.ph * d.pw;
  if (total == 0) return 0;
  const int threads = 256;
  conv_relu_pool<<<static_cast<unsigned>((total + threads - 1) / threads), threads, 0, static_cast<cudaStream_t>(ctx->stream)>>>(
      static_cast<const float*>(X.data), static_cast<const float*>(Wt.data), static_cast<const float*>(Bs.data),
      static_cast<float*>(Y.data), d);
  return cudaGetLastError() == cudaSuccess ? 0 : 4;
}
