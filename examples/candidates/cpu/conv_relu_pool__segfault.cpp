// Crashing conv + relu + pool: validates its arguments, then writes through a null pointer (SIGSEGV). Expected verdict: FAIL at run (crash).
#include "ca_kernel.h"

static bool is_f32(const ca_tensor& t, int ndim) {
  return t.data != nullptr && t.dtype == CA_FLOAT32 && t.ndim == ndim && t.shape != nullptr;
}

extern "C" int ca_forward(ca_context*, const ca_tensor* inputs, int n_inputs, ca_tensor* outputs, int n_outputs) {
  if (inputs == nullptr || outputs == nullptr || n_inputs != 3 || n_outputs != 1) return 1;
  if (!is_f32(inputs[0], 4) || !is_f32(inputs[1], 4) || !is_f32(inputs[2], 1) || !is_f32(outputs[0], 4)) return 2;
  // BUG: a scratch pointer that was never allocated. volatile keeps the compiler from
  // proving it null and turning the store into a trap instruction.
  float* volatile scratch = nullptr;
  scratch[0] = 1.0f;
  static_cast<float*>(outputs[0].data)[0] = scratch[0];
  return 0;
}
