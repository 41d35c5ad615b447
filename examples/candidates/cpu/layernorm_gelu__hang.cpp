// Hanging layer_norm + gelu: validates its arguments, then spins forever on a volatile flag that nothing clears. Expected verdict: FAIL at timeout.
#include "ca_kernel.h"

static bool is_f32(const ca_tensor& t) { return t.data != nullptr && t.dtype == CA_FLOAT32 && t.shape != nullptr; }

extern "C" int ca_forward(ca_context*, const ca_tensor* inputs, int n_inputs, ca_tensor* outputs, int n_outputs) {
  if (inputs == nullptr || outputs == nullptr || n_inputs != 3 || n_outputs != 1) return 1;
  const ca_tensor& X = inputs[0];
  if (!is_f32(X) || !is_f32(inputs[1]) || !is_f32(inputs[2]) || !is_f32(outputs[0])) return 2;
  if (X.ndim < 1 || inputs[1].ndim != 1 || inputs[2].ndim != 1 || outputs[0].ndim != X.ndim) return 2;
  // BUG: waits for a flag nobody sets. The volatile read is a side effect, so the
  // compiler must keep the loop (an empty side-effect-free loop could be assumed to end).
  volatile bool waiting = true;
  while (waiting) {
  }
  return 0;
}
