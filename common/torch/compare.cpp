#include "torch/compare.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <vector>

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

// Elements compared at once: float64 chunks of 256 MiB, a few times that in temporaries on a device.
constexpr int64_t k_compare_chunk = int64_t(1) << 25;

// What the checks need from one pass over the elements. first_* are -1 where nothing was found.
struct Summary {
  int64_t first_bad_nonfinite = -1;  // NaN/Inf in the output where the reference is finite
  double max_abs = 0;
  double max_rel = 0;
  double ref_norm = 0;   // over finite reference elements
  double diff_norm = 0;  // likewise
  int64_t over = 0;      // elements past the limit
  int64_t first_over = -1;
};

// The checks, element by element, in float64. Where the reference itself is NaN/Inf the candidate must match it
// exactly; NaN and Inf never exceed a limit, so a finite output there is counted as over by the second term.
struct Element {
  bool bad_nonfinite, over, ref_finite, significant;
  double diff_finite, ref;
  Element(double o, double r, const Tolerance& tolerance) : ref(r) {
    ref_finite = std::isfinite(r);
    bad_nonfinite = ref_finite && !std::isfinite(o);
    const double diff = (std::isnan(o) && std::isnan(r)) || o == r ? 0.0 : std::abs(o - r);
    over = diff > tolerance.atol + tolerance.rtol * std::abs(r) || (!ref_finite && diff != 0);
    diff_finite = std::isfinite(diff) ? diff : INFINITY;
    significant = std::abs(r) > tolerance.atol;
  }
};

// cpu: one pass on every core. ATen's ops would make about twenty passes over float64 copies, which cost 0.7 s
// for a 4M-element output, and a profile checks every timed call.
Summary summarize_fused(const at::Tensor& out, const at::Tensor& ref, const Tolerance& tolerance) {
  const double* o = out.data_ptr<double>();
  const double* r = ref.data_ptr<double>();
  const int64_t n = out.numel();
  constexpr int64_t k_grain = 1 << 15;
  const int64_t chunks = (n + k_grain - 1) / k_grain;
  std::vector<Summary> parts(static_cast<size_t>(chunks));
  std::vector<double> ref_sq(static_cast<size_t>(chunks)), diff_sq(static_cast<size_t>(chunks));
  at::parallel_for(0, chunks, 1, [&](int64_t first, int64_t last) {
    for (int64_t chunk = first; chunk < last; ++chunk) {
      Summary& part = parts[size_t(chunk)];
      for (int64_t i = chunk * k_grain, end = std::min(n, i + k_grain); i < end; ++i) {
        const Element e(o[i], r[i], tolerance);
        if (e.bad_nonfinite && part.first_bad_nonfinite < 0) part.first_bad_nonfinite = i;
        if (e.over && part.over++ == 0) part.first_over = i;
        part.max_abs = std::max(part.max_abs, e.diff_finite);
        if (e.significant) part.max_rel = std::max(part.max_rel, e.diff_finite / std::abs(e.ref));
        if (e.ref_finite) {
          ref_sq[size_t(chunk)] += e.ref * e.ref;
          diff_sq[size_t(chunk)] += e.diff_finite * e.diff_finite;
        }
      }
    }
  });
  // Chunks combine in index order, so the first index found is the smallest and the sums do not depend on threads.
  Summary all;
  double ref_sum = 0, diff_sum = 0;
  for (size_t chunk = 0; chunk < parts.size(); ++chunk) {
    const Summary& part = parts[chunk];
    if (all.first_bad_nonfinite < 0) all.first_bad_nonfinite = part.first_bad_nonfinite;
    if (all.first_over < 0) all.first_over = part.first_over;
    all.over += part.over;
    all.max_abs = std::max(all.max_abs, part.max_abs);
    all.max_rel = std::max(all.max_rel, part.max_rel);
    ref_sum += ref_sq[chunk];
    diff_sum += diff_sq[chunk];
  }
  all.ref_norm = std::sqrt(ref_sum);
  all.diff_norm = std::sqrt(diff_sum);
  return all;
}

// Other devices: the same checks as ATen ops on the device, with every scalar brought back in one copy (each
// .item() would wait for the device on its own).
Summary summarize_aten(const at::Tensor& out, const at::Tensor& ref, const Tolerance& tolerance) {
  at::Tensor ref_finite = at::isfinite(ref);
  at::Tensor bad_nonfinite = at::logical_and(ref_finite, at::logical_not(at::isfinite(out)));
  at::Tensor both_nan = at::logical_and(at::isnan(out), at::isnan(ref));
  at::Tensor diff = at::where(at::logical_or(both_nan, at::eq(out, ref)), at::zeros_like(out), at::abs(out - ref));
  at::Tensor limit = tolerance.atol + tolerance.rtol * at::abs(ref);
  at::Tensor over = at::logical_or(at::gt(diff, limit), at::logical_and(at::logical_not(ref_finite), at::ne(diff, 0)));
  at::Tensor diff_finite = at::where(at::isfinite(diff), diff, at::full_like(diff, INFINITY));
  at::Tensor significant = at::gt(at::abs(ref), tolerance.atol);
  at::Tensor zeros = at::zeros_like(diff);
  at::Tensor scalars = at::stack({bad_nonfinite.any().to(at::kDouble), diff_finite.max(),
                                  at::where(significant, diff_finite / at::abs(ref), zeros).max(),
                                  at::where(ref_finite, ref, zeros).norm(),
                                  at::where(ref_finite, diff_finite, zeros).norm(), over.sum().to(at::kDouble)})
                           .cpu();
  const double* v = scalars.data_ptr<double>();
  Summary all;
  all.max_abs = v[1];
  all.max_rel = v[2];
  all.ref_norm = v[3];
  all.diff_norm = v[4];
  all.over = int64_t(v[5]);
  // Where something failed, where: one more wait, on the failing path only.
  if (v[0] != 0) all.first_bad_nonfinite = bad_nonfinite.nonzero()[0][0].item<int64_t>();
  if (all.over > 0) all.first_over = over.nonzero()[0][0].item<int64_t>();
  return all;
}

}  // namespace

Comparison compare_output(const at::Tensor& out_any, const at::Tensor& ref_any, const Tolerance& tolerance,
                          ComparePath path) {
  Comparison result;
  if (out_any.sizes() != ref_any.sizes() || out_any.scalar_type() != ref_any.scalar_type()) {
    std::ostringstream message;
    message << "shape or dtype mismatch: got " << out_any.sizes() << " " << out_any.scalar_type() << ", expected "
            << ref_any.sizes() << " " << ref_any.scalar_type();
    result.message = message.str();
    return result;
  }
  const int64_t n = out_any.numel();
  if (n == 0) {
    result.ok = true;
    return result;
  }
  // Compare in float64 on the reference's device; integer outputs compare exactly through the same path. In chunks,
  // so that the float64 copies and the temporaries fit beside a full-size task's tensors (a 6 GiB float32 output
  // made about 60 GiB of them at once). Each chunk is moved in its own dtype first, then converted there: a blocking
  // copy to the GPU with a dtype change converts on the host into a fresh pageable tensor, where the move alone is
  // one DMA from the runner's page-locked output region.
  const at::Tensor out_flat = out_any.reshape({-1});
  const at::Tensor ref_flat = ref_any.reshape({-1});
  const bool fused = path == ComparePath::fused || (path == ComparePath::automatic && ref_any.is_cpu());
  Summary s;
  double ref_sq = 0, diff_sq = 0;
  for (int64_t begin = 0; begin < n; begin += k_compare_chunk) {
    const int64_t end = std::min(n, begin + k_compare_chunk);
    at::Tensor out = out_flat.slice(0, begin, end).to(ref_any.device()).to(at::kDouble).contiguous();
    at::Tensor ref = ref_flat.slice(0, begin, end).to(at::kDouble).contiguous();
    const Summary part = fused ? summarize_fused(out, ref, tolerance) : summarize_aten(out, ref, tolerance);
    if (s.first_bad_nonfinite < 0 && part.first_bad_nonfinite >= 0)
      s.first_bad_nonfinite = begin + part.first_bad_nonfinite;
    if (s.first_over < 0 && part.first_over >= 0) s.first_over = begin + part.first_over;
    s.over += part.over;
    s.max_abs = std::max(s.max_abs, part.max_abs);
    s.max_rel = std::max(s.max_rel, part.max_rel);
    ref_sq += part.ref_norm * part.ref_norm;
    diff_sq += part.diff_norm * part.diff_norm;
  }
  s.ref_norm = std::sqrt(ref_sq);
  s.diff_norm = std::sqrt(diff_sq);
  auto out_at = [&](int64_t i) { return out_flat[i].item<double>(); };
  auto ref_at = [&](int64_t i) { return ref_flat[i].item<double>(); };
  if (s.first_bad_nonfinite >= 0) {
    const int64_t at_index = s.first_bad_nonfinite;
    bool is_nan = std::isnan(out_at(at_index));
    result.message = std::string(is_nan ? "NaN" : "Inf") + " at " + format_index(out_any, at_index) +
                     " where the reference is " + number(ref_at(at_index)) +
                     (is_nan ? " (an unwritten element stays NaN)" : "");
    return result;
  }
  result.max_abs = s.max_abs;
  result.max_rel = s.max_rel;
  result.rel_l2 = s.ref_norm > 0 ? s.diff_norm / s.ref_norm : s.diff_norm;
  if (s.over > 0) {
    const int64_t at_index = s.first_over;
    result.message = "mismatch at " + format_index(out_any, at_index) + ": got " + number(out_at(at_index)) +
                     ", expected " + number(ref_at(at_index)) + " (" + std::to_string(s.over) + " of " +
                     std::to_string(n) + " elements off; max_abs " + number(result.max_abs) + ", atol " +
                     number(tolerance.atol) + ", rtol " + number(tolerance.rtol) + ")";
    return result;
  }
  if (s.ref_norm > 0 && result.rel_l2 > tolerance.rtol) {
    result.message = "normalized error ||out - ref|| / ||ref|| = " + number(result.rel_l2) + " exceeds rtol " +
                     number(tolerance.rtol) + " (the reference is small against atol, so allclose alone would pass)";
    return result;
  }
  result.ok = true;
  return result;
}

}  // namespace ca
