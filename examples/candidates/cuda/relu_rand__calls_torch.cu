// Cheating relu (exploit A1): includes a PyTorch header and calls at::relu on the device pointers instead of writing a kernel. Expected verdict: FAIL at static (the source check runs before nvcc).
#include <torch/extension.h>

#include "ca_kernel.h"

extern "C" int ca_forward(ca_context*, const ca_tensor* inputs, int n_inputs, ca_tensor* outputs, int n_outputs) {
  if (inputs == nullptr || outputs == nullptr || n_inputs != 1 || n_outputs != 1) return 1;
  const ca_tensor& X = inputs[0];
  const ca_tensor& Y = outputs[0];
  if (X.dtype != CA_FLOAT32 || X.ndim != 2 || Y.dtype != CA_FLOAT32 || Y.ndim != 2) return 2;
  auto options = at::TensorOptions().dtype(at::kFloat).device(at::kCUDA);
  at::Tensor x = at::from_blob(X.data, {X.shape[0], X.shape[1]}, options);
  at::Tensor y = at::from_blob(Y.data, {Y.shape[0], Y.shape[1]}, options);
  y.copy_(at::relu(x));
  return 0;
}
