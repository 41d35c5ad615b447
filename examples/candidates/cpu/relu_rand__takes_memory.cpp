// Greedy relu (issue 23, "shares are not enforced"): asks for 64 GiB of memory, more than its share, and uses the
// answer without a check, as a careless or greedy kernel would. Expected verdict: run (the address-space limit refuses
// the allocation, the NULL it gets faults, and the message names the memory share, "out of memory").
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

extern "C" int ca_forward(ca_context*, const ca_tensor* inputs, int n_inputs, ca_tensor* outputs, int n_outputs) {
  int64_t n = 0;
  if (!check_args(inputs, n_inputs, outputs, n_outputs, &n)) return 1;
  const int64_t bytes = int64_t(64) << 30;
  char* held = static_cast<char*>(__builtin_malloc(size_t(bytes)));
  for (int64_t i = 0; i < bytes; i += 4096) held[i] = 1;
  const float* x = static_cast<const float*>(inputs[0].data);
  float* y = static_cast<float*>(outputs[0].data);
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] < 0.0f ? 0.0f : x[i];
  return 0;
}
