// Compares a candidate's outputs with the reference's (DESIGN §6): allclose
// with atol/rtol, NaN/Inf where the reference is finite, unwritten (still
// poisoned) elements, and a normalized error that catches outputs too small
// for atol to judge (EXPLOITS B6).
#pragma once

#include <string>

#include <ATen/ATen.h>

namespace ca {

struct Tolerance {
  double atol = 1e-2;
  double rtol = 1e-2;
};

struct Comparison {
  bool ok = false;
  double max_abs = 0;  // max |out - ref|
  double max_rel = 0;  // max |out - ref| / |ref| over elements with |ref| > atol
  double rel_l2 = 0;   // ||out - ref|| / ||ref|| (0 when ref is all zeros and out matches)
  std::string message; // why it failed, for an agent: which check, where, the values
};

/// Compares one output. Shapes and dtypes must match exactly.
Comparison compare_output(const at::Tensor& out, const at::Tensor& ref, const Tolerance& tolerance);

}  // namespace ca
