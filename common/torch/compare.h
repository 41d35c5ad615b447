// Compares a candidate's outputs with the reference's (docs/EXPLOITS.md): allclose
// with atol/rtol, NaN/Inf where the reference is finite, unwritten (still
// poisoned) elements, and a normalized error that catches outputs too small
// for atol to judge (docs/EXPLOITS.md, B6).
#pragma once

#include <string>

#include <ATen/ATen.h>

#include "harness/options.h"

namespace ca {

/// How the elements are visited: automatic is fused for a reference on the cpu (one pass, every core) and ATen ops on
/// other devices. The other two force a path, so tests can hold both to one answer.
enum class ComparePath { automatic, fused, aten };

/// Compares one output, on the reference's device. Shapes and dtypes must match exactly.
Comparison compare_output(const at::Tensor& out, const at::Tensor& ref, const Tolerance& tolerance,
                          ComparePath path = ComparePath::automatic);

}  // namespace ca
