// The steps of ca-filter's rubric that look at tensors, one function each, in the order TaskFilter::judge runs them
// (filter.h has the rubric). Internal to the filter stage: filter.cpp and the unit tests include it; tools see only
// filter.h, which names no LibTorch type.
#pragma once

#include <cstdint>
#include <expected>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "filter/filter.h"
#include "harness/options.h"
#include "ir/program.h"

namespace ca {

/// Why a step rejects a task.
struct Reject {
  RejectReason reason;
  std::string detail;
};
/// A step's verdict: nullopt when the task passes it.
using Step = std::optional<Reject>;

using Outputs = std::vector<at::Tensor>;
/// Runs the task's program on inputs then params; returns its outputs or why it failed.
using RunProgram = std::function<std::expected<Outputs, std::string>(const std::vector<at::Tensor>&)>;

/// One trial: the tensors (inputs then params) a task run gets, and the reference outputs for them.
struct Trial {
  std::vector<at::Tensor> tensors;
  Outputs outputs;
};

/// "%.4g" of `value` (or another printf format), as every detail prints numbers.
std::string number(double value, const char* format = "%.4g");

/// random_op: an op of meta.ops draws random numbers (is_random_op).
Step check_random_ops(const Json& meta);
/// nondeterministic: two runs on the same inputs of `seed` differ bit for bit (NaN equals NaN of the same bits).
Step check_deterministic(const Outputs& first, const Outputs& second, uint64_t seed);
/// non_finite: a floating output holds NaN or Inf.
Step check_finite(const Outputs& outputs);
/// control_zeros: an all-zeros output passes verification on the timed distribution: against both `a` and `a_other`,
/// two seeds of the task's own inputs (those ca-profile times). A candidate can tell that distribution from its inputs
/// (verification's signed trials draw from [-1, 1)), so a control that passes there earns the speed of doing nothing.
Step check_zeros_control(const Trial& a, const Trial& a_other, const Tolerance& tolerance);
/// degenerate_constant: an output is empty, has all elements equal, or is one element equal across the two trials.
Step check_not_constant(const Trial& a, const Trial& b);
/// ignores_input: redrawing one input or param (tensor index i of `a`, by perturbed()) changes no output. Tensors
/// that cannot vary (integer or bool with a fixed init) are named in `unperturbed` and not checked.
Step check_uses_every_tensor(const Program& program, const Trial& a, const RunProgram& run, uint64_t seed,
                             const at::Device& device, std::vector<std::string>& unperturbed);
/// control_mean and control_passthrough: on the timed distribution (`a` and `a_other`, two seeds of the task's own
/// inputs), a constant equal to an output's mean on the other seed, or an input or param of the output's shape and
/// dtype, passes verification against both.
Step check_mean_and_passthrough_controls(const Program& program, const Trial& a, const Trial& a_other,
                                         const Tolerance& tolerance);
/// The reference's rounding error as verification sees it: `exact` (a float64 run) rounded to `ref`'s dtype, judged
/// as a candidate against `ref` with the tolerance times `share` (torch/compare.h). Not ok: the output is mostly
/// rounding noise, and a correct kernel that rounds differently can fail verification.
Comparison rounding_error(const at::Tensor& exact, const at::Tensor& ref, const Tolerance& tolerance, double share);
/// noise_output: over both trials, the float64 run of the same values, rounded, fails verification at `share` of the
/// tolerance. `rounding` gets the largest normalized error seen; a float64 run that fails adds a flag instead.
Step check_rounding_noise(const Trial& a, const Trial& b, const RunProgram& run, const Tolerance& tolerance,
                          double share, double& rounding, std::vector<std::string>& flags);
/// Flags (not rejects): floating outputs smaller than atol everywhere, where allclose alone would let zeros pass.
std::vector<std::string> tiny_output_flags(const Outputs& outputs, double atol);
/// too_fast or too_slow: the eager median outside [min_ms, max_ms] (a bound of 0 is none).
Step check_runtime_window(double median_ms, size_t calls, double min_ms, double max_ms);
/// compile_error: a compiled output differs from eager's beyond the tolerance.
Step check_compiled_outputs(const Outputs& compiled, const Outputs& eager, const Tolerance& tolerance);

}  // namespace ca
