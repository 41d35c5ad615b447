#include "aten/compare.h"

#include <cstdio>
#include <sstream>

namespace ca {
namespace {

std::string format_index(const at::Tensor& like, int64_t flat) {
  std::string text = "[";
  auto sizes = like.sizes();
  std::vector<int64_t> index(sizes.size());
  for (int64_t d = int64_t(sizes.size()) - 1; d >= 0; --d) {
    index[size_t(d)] = sizes[size_t(d)] == 0 ? 0 : flat % sizes[size_t(d)];
    flat = sizes[size_t(d)] == 0 ? 0 : flat / sizes[size_t(d)];
  }
  for (size_t d = 0; d < index.size(); ++d) text += (d ? ", " : "") + std::to_string(index[d]);
  return text + "]";
}

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", value);
  return text;
}

}  // namespace

Comparison compare_output(const at::Tensor& out_any, const at::Tensor& ref_any, const Tolerance& tolerance) {
  Comparison result;
  if (out_any.sizes() != ref_any.sizes() || out_any.scalar_type() != ref_any.scalar_type()) {
    std::ostringstream message;
    message << "shape or dtype mismatch: got " << out_any.sizes() << " " << out_any.scalar_type() << ", expected "
            << ref_any.sizes() << " " << ref_any.scalar_type();
    result.message = message.str();
    return result;
  }
  // Compare in float64 on the reference's device; integer outputs compare exactly through the same path.
  at::Tensor out = out_any.to(ref_any.device(), at::kDouble).flatten();
  at::Tensor ref = ref_any.to(at::kDouble).flatten();
  if (out.numel() == 0) {
    result.ok = true;
    return result;
  }

  at::Tensor ref_finite = at::isfinite(ref);
  at::Tensor bad_nonfinite = at::logical_and(ref_finite, at::logical_not(at::isfinite(out)));
  if (bad_nonfinite.any().item<bool>()) {
    int64_t at_index = bad_nonfinite.nonzero()[0][0].item<int64_t>();
    bool is_nan = std::isnan(out[at_index].item<double>());
    result.message = std::string(is_nan ? "NaN" : "Inf") + " at " + format_index(out_any, at_index) + " where the reference is " +
                     number(ref[at_index].item<double>()) + (is_nan ? " (an unwritten element stays NaN)" : "");
    return result;
  }
  // Where the reference itself is NaN/Inf, the candidate must match it exactly.
  at::Tensor both_nan = at::logical_and(at::isnan(out), at::isnan(ref));
  at::Tensor diff = at::where(at::logical_or(both_nan, at::eq(out, ref)), at::zeros_like(out), at::abs(out - ref));
  at::Tensor limit = tolerance.atol + tolerance.rtol * at::abs(ref);
  // NaN and Inf never exceed a limit, so a finite output where the reference is not is counted here.
  at::Tensor over = at::logical_or(at::gt(diff, limit), at::logical_and(at::logical_not(ref_finite), at::ne(diff, 0)));
  at::Tensor diff_finite = at::where(at::isfinite(diff), diff, at::full_like(diff, INFINITY));
  result.max_abs = diff_finite.max().item<double>();
  at::Tensor significant = at::gt(at::abs(ref), tolerance.atol);
  result.max_rel = significant.any().item<bool>()
                       ? at::where(significant, diff_finite / at::abs(ref), at::zeros_like(diff)).max().item<double>()
                       : 0.0;
  at::Tensor finite_ref = at::where(ref_finite, ref, at::zeros_like(ref));
  double ref_norm = finite_ref.norm().item<double>();
  double diff_norm = at::where(ref_finite, diff_finite, at::zeros_like(diff)).norm().item<double>();
  result.rel_l2 = ref_norm > 0 ? diff_norm / ref_norm : diff_norm;

  if (over.any().item<bool>()) {
    int64_t at_index = over.nonzero()[0][0].item<int64_t>();
    int64_t count = over.sum().item<int64_t>();
    result.message = "mismatch at " + format_index(out_any, at_index) + ": got " + number(out[at_index].item<double>()) +
                     ", expected " + number(ref[at_index].item<double>()) + " (" + std::to_string(count) + " of " +
                     std::to_string(out.numel()) + " elements off; max_abs " + number(result.max_abs) + ", atol " +
                     number(tolerance.atol) + ", rtol " + number(tolerance.rtol) + ")";
    return result;
  }
  if (ref_norm > 0 && result.rel_l2 > tolerance.rtol) {
    result.message = "normalized error ||out - ref|| / ||ref|| = " + number(result.rel_l2) + " exceeds rtol " +
                     number(tolerance.rtol) + " (the reference is small against atol, so allclose alone would pass)";
    return result;
  }
  result.ok = true;
  return result;
}

}  // namespace ca
