// Host decoy relu (exploits A2): a correct kernel is compiled but never launched; the right outputs are computed on the host between two copies. Expected verdict: FAIL at launch.
#include <cuda_runtime.h>

#include <vector>

#include "ca_kernel.h"

static bool is_f32(const ca_tensor& t, int ndim) {
  return t.data != nullptr && t.dtype == CA_FLOAT32 && t.ndim == ndim && t.shape != nullptr;
}

// Validates relu's arguments: one 2-D float32 input, one output of the same shape. Sets *n to the element count.
static bool check_args(const ca_tensor* inputs, int n_inputs, const ca_tensor* outputs, int n_outputs, int64_t* n) {
  if (inputs == nullptr || outputs == nullptr || n_inputs != 1 || n_outputs != 1) return false;
  const ca_tensor& X = inputs[0];
  const ca_tensor& Y = outputs[0];
  if (!is_f32(X, 2) || !is_f32(Y, 2)) return false;
  if (Y.shape[0] != X.shape[0] || Y.shape[1] != X.shape[1]) return false;
  *n = X.shape[0] * X.shape[1];
  return true;
}

__global__ void relu_kernel(const float* x, float* y, int64_t n) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) {
    const float v = x[i];
    y[i] = v < 0.0f ? 0.0f : v;
  }
}

// The right answer, computed on the host between two copies; relu_kernel only runs for an empty tensor, never here.
extern "C" int ca_forward(ca_context* ctx, const ca_tensor* inputs, int n_inputs, ca_tensor* outputs, int n_outputs) {
  int64_t n = 0;
  if (ctx == nullptr || !check_args(inputs, n_inputs, outputs, n_outputs, &n)) return 1;
  cudaStream_t stream = static_cast<cudaStream_t>(ctx->stream);
  if (n == 0) {
    relu_kernel<<<1, 1, 0, stream>>>(static_cast<const float*>(inputs[0].data), static_cast<float*>(outputs[0].data), n);
    return 0;
  }
  std::vector<float> host(static_cast<size_t>(n));
  const size_t bytes = host.size() * sizeof(float);
  if (cudaMemcpyAsync(host.data(), inputs[0].data, bytes, cudaMemcpyDeviceToHost, stream) != cudaSuccess) return 2;
  if (cudaStreamSynchronize(stream) != cudaSuccess) return 3;
  for (float& v : host) v = v < 0.0f ? 0.0f : v;
  if (cudaMemcpyAsync(outputs[0].data, host.data(), bytes, cudaMemcpyHostToDevice, stream) != cudaSuccess) return 4;
  return cudaStreamSynchronize(stream) == cudaSuccess ? 0 : 5;
}
