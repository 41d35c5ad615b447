// The TF32 mode of this process's LibTorch (at::globalContext(): cuBLAS matmuls, cuDNN convolutions and RNNs) for
// a stretch of code: the timed baselines run under the harness's Tf32Mode, correctness references under none.
#pragma once

#include <string>

#include "harness/options.h"

namespace ca {

/// Sets the mode for its lifetime and puts the previous settings back when it ends, so scopes nest (a baseline's
/// timing inside a judgement that is fp32 otherwise). Not for concurrent use: the settings are process-wide.
class Tf32Scope {
 public:
  explicit Tf32Scope(Tf32Mode mode);
  ~Tf32Scope();
  Tf32Scope(const Tf32Scope&) = delete;
  Tf32Scope& operator=(const Tf32Scope&) = delete;

 private:
  bool m_cublas = false;
  bool m_cudnn = false;
};

/// Sets the mode for the rest of the process, before any thread that runs LibTorch starts (the settings are plain
/// process-wide values: a scope in one thread would change them under another).
void set_tf32_mode(Tf32Mode mode);

/// The mode at::globalContext() is in now, read back from it: "none", "pytorch", "all", or "cublas-only" (matmuls TF32,
/// convolutions not, which no Tf32Mode sets). Records name the baselines' precision with it, read where they ran.
std::string current_tf32_mode();

}  // namespace ca
