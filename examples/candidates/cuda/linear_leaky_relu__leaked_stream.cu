// KernelBench's non-default-stream adversarial case: the same linear + leaky_relu, but cuBLAS's handle is moved to a non-blocking stream the candidate makes and leaks, so its gemm runs outside the events on ctx->stream. Expected verdict: static (a candidate may not make a stream; docs/EXPLOITS.md, C1).
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "ca_kernel.h"

static bool is_f32(const ca_tensor& t, int ndim) {
  return t.data != nullptr && t.dtype == CA_FLOAT32 && t.ndim == ndim && t.shape != nullptr;
}

__global__ void leaky_relu_kernel(float* y, int64_t n, float slope) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) {
    const float v = y[i];
    y[i] = v < 0.0f ? v * slope : v;
  }
}

extern "C" int ca_forward(ca_context* ctx, const ca_tensor* inputs, int n_inputs, ca_tensor* outputs, int n_outputs) {
  if (ctx == nullptr || inputs == nullptr || outputs == nullptr || n_inputs != 2 || n_outputs != 1) return 1;
  const ca_tensor& X = inputs[0];   // [M, K]
  const ca_tensor& W = inputs[1];   // [N, K]
  const ca_tensor& Y = outputs[0];  // [M, N]
  if (!is_f32(X, 2) || !is_f32(W, 2) || !is_f32(Y, 2)) return 2;
  const int64_t M = X.shape[0], K = X.shape[1], N = W.shape[0];
  if (W.shape[1] != K || Y.shape[0] != M || Y.shape[1] != N) return 2;
  if (ctx->cublas == nullptr) return 3;
  if (M == 0 || N == 0) return 0;
  cublasHandle_t handle = static_cast<cublasHandle_t>(ctx->cublas);
  static cudaStream_t side = nullptr;  // leaked: made once, never destroyed
  if (side == nullptr && cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking) != cudaSuccess) return 3;
  cublasSetStream(handle, side);
  // Row-major Y = X W^T is column-major Y^T = W X^T: W (column-major K x N) transposed, X^T as is.
  const float one = 1.0f, zero = 0.0f;
  cublasStatus_t status = cublasSgemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(N), static_cast<int>(M), static_cast<int>(K),
                                      &one, static_cast<const float*>(W.data), static_cast<int>(K),
                                      static_cast<const float*>(X.data), static_cast<int>(K), &zero,
                                      static_cast<float*>(Y.data), static_cast<int>(N));
  if (status != CUBLAS_STATUS_SUCCESS) return 4;
  const int64_t n = M * N;
  const int threads = 256;
  leaky_relu_kernel<<<static_cast<unsigned>((n + threads - 1) / threads), threads, 0, static_cast<cudaStream_t>(ctx->stream)>>>(
      static_cast<float*>(Y.data), n, 0.1f);
  return cudaGetLastError() == cudaSuccess ? 0 : 5;
}
