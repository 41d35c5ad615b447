#include "torch/precision.h"

#include <ATen/Context.h>

namespace ca {

void set_tf32_mode(Tf32Mode mode) {
  // setAllowTF32CuBLAS is float32_matmul_precision "high" (true) or "highest" (false), as torch.backends sets it.
  at::globalContext().setAllowTF32CuBLAS(mode == Tf32Mode::all);
  at::globalContext().setAllowTF32CuDNN(mode != Tf32Mode::none);
}

Tf32Scope::Tf32Scope(Tf32Mode mode)
    : m_cublas(at::globalContext().allowTF32CuBLAS()), m_cudnn(at::globalContext().allowTF32CuDNN()) {
  set_tf32_mode(mode);
}

Tf32Scope::~Tf32Scope() {
  at::globalContext().setAllowTF32CuBLAS(m_cublas);
  at::globalContext().setAllowTF32CuDNN(m_cudnn);
}

std::string current_tf32_mode() {
  const bool cublas = at::globalContext().allowTF32CuBLAS(), cudnn = at::globalContext().allowTF32CuDNN();
  if (cublas && !cudnn) return "cublas-only";
  return tf32_mode_name(cublas ? Tf32Mode::all : cudnn ? Tf32Mode::pytorch : Tf32Mode::none);
}

}  // namespace ca
