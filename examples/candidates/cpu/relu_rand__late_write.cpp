// Cheating relu (late outputs, issue 23): each call only copies its input aside and returns at once; the next call
// first computes the previous call's relu into the previous call's output, which is still mapped in the runner (the
// output region), so that work is never inside a timed call. Expected verdict: run (each call's outputs are fixed on
// the trusted side when its report arrives, and call 1's changed during call 2).
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

static std::vector<float> g_pending_input;
static float* g_pending_output = nullptr;

extern "C" int ca_forward(ca_context*, const ca_tensor* inputs, int n_inputs, ca_tensor* outputs, int n_outputs) {
  int64_t n = 0;
  if (!check_args(inputs, n_inputs, outputs, n_outputs, &n)) return 1;
  if (g_pending_output != nullptr) {
    for (size_t i = 0; i < g_pending_input.size(); ++i) g_pending_output[i] = g_pending_input[i] < 0.0f ? 0.0f : g_pending_input[i];
  }
  const float* x = static_cast<const float*>(inputs[0].data);
  g_pending_input.assign(x, x + n);
  g_pending_output = static_cast<float*>(outputs[0].data);
  return 0;
}
