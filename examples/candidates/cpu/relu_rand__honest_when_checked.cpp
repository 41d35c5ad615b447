// Cheating relu (exploits B12): correct for the first five calls of a process, which is all ca-verify makes, then
// returns the fifth call's answer without computing. Expected verdict: PASS; ca-profile checks its timed calls too
// and fails it at compare, so its reward is -1.
#include <cstring>
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

extern "C" int ca_forward(ca_context*, const ca_tensor* inputs, int n_inputs, ca_tensor* outputs, int n_outputs) {
  static int calls = 0;
  static std::vector<float> last;
  int64_t n = 0;
  if (!check_args(inputs, n_inputs, outputs, n_outputs, &n)) return 1;
  float* y = static_cast<float*>(outputs[0].data);
  if (++calls <= 5) {
    const float* x = static_cast<const float*>(inputs[0].data);
    last.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) last[i] = x[i] < 0.0f ? 0.0f : x[i];
  }
  std::memcpy(y, last.data(), static_cast<size_t>(n) * sizeof(float));
  return 0;
}
