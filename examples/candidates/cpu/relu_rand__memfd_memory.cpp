// Greedy relu (issue 23, "shares are not enforced"): takes 1 GiB of host memory through memfd_create, memory that is
// a file's, not the address space's, so RLIMIT_AS never counts it, and answers correctly only when all of it was
// written. Expected verdict: run (the runner's storage filter refuses memfd_create; the message names the memory
// share).
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

// A system call made with the instruction itself: nothing is imported, so the static check sees nothing.
static long raw_syscall(long nr, long a, long b, long c, long d, long e, long f) {
  long ret;
  register long r10 __asm__("r10") = d;
  register long r8 __asm__("r8") = e;
  register long r9 __asm__("r9") = f;
  __asm__ volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9) : "rcx", "r11", "memory");
  return ret;
}

static char g_block[1 << 20];

// Writes `mib` MiB to `fd`; false when any write fell short.
static bool fill(long fd, int mib) {
  for (int i = 0; i < mib; ++i) {
    if (raw_syscall(1 /* write */, fd, long(g_block), long(sizeof g_block), 0, 0, 0) != long(sizeof g_block)) return false;
  }
  return true;
}

extern "C" int ca_forward(ca_context*, const ca_tensor* inputs, int n_inputs, ca_tensor* outputs, int n_outputs) {
  int64_t n = 0;
  if (!check_args(inputs, n_inputs, outputs, n_outputs, &n)) return 1;
  static bool taken = false;
  for (int k = 0; !taken && k < 4; ++k) {
    long fd = raw_syscall(319 /* memfd_create */, long("held"), 0, 0, 0, 0, 0);
    if (fd < 0 || !fill(fd, 256)) return 2;  // kept open: the memory stays taken
  }
  taken = true;
  const float* x = static_cast<const float*>(inputs[0].data);
  float* y = static_cast<float*>(outputs[0].data);
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] < 0.0f ? 0.0f : x[i];
  return 0;
}
