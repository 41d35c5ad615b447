#include "filter/rubric.h"

#include <cstdio>

#include "torch/compare.h"
#include "torch/tensors.h"

namespace ca {
namespace {

std::string label(const Program& program, size_t index) {
  if (index < program.inputs.size()) return "input '" + program.inputs[index].name + "'";
  return "param '" + program.params[index - program.inputs.size()].name + "'";
}

const TensorSpec& spec_at(const Program& program, size_t index) {
  return index < program.inputs.size() ? program.inputs[index] : program.params[index - program.inputs.size()];
}

bool random_init(const Init& init) {
  switch (init.dist) {
    case Dist::rand:
    case Dist::randn:
    case Dist::uniform:
    case Dist::normal:
    case Dist::kaiming_uniform:
    case Dist::randint:
      return init.dist != Dist::uniform || init.a != init.b;
    default:
      return false;
  }
}

// Tensor `index` drawn afresh: another seed when its init is random; otherwise (ones, zeros, a constant, a weights
// file) its values plus Gaussian noise of scale 1, so that a fixed init still varies. nullopt when it cannot vary
// (an integer or bool tensor with a fixed init).
std::optional<at::Tensor> perturbed(const Program& program, const std::vector<at::Tensor>& tensors, size_t index,
                                    uint64_t seed, const at::Device& device) {
  const TensorSpec& spec = spec_at(program, index);
  if (random_init(spec.init)) return make_tensor(spec, seed, index, device);
  if (!at::isFloatingType(tensors[index].scalar_type())) return std::nullopt;
  TensorSpec noise = spec;
  noise.init = Init{Dist::randn};
  return tensors[index] + make_tensor(noise, seed, index, device);
}

// Bit for bit: NaN equals NaN of the same bits, -0.0 differs from 0.0.
bool same_bits(const at::Tensor& a, const at::Tensor& b) {
  if (a.sizes() != b.sizes() || a.scalar_type() != b.scalar_type()) return false;
  if (a.numel() == 0) return true;
  auto bytes = [](const at::Tensor& t) { return t.contiguous().reshape({-1}).view(at::kByte); };
  return at::equal(bytes(a), bytes(b));
}

bool same_outputs(const Outputs& a, const Outputs& b) {
  if (a.size() != b.size()) return false;
  for (size_t k = 0; k < a.size(); ++k) {
    if (!same_bits(a[k], b[k])) return false;
  }
  return true;
}

// The same values in float64 (floating tensors only): a run on them stands in for the exact output.
std::vector<at::Tensor> in_float64(const std::vector<at::Tensor>& tensors) {
  std::vector<at::Tensor> wide;
  for (const at::Tensor& tensor : tensors)
    wide.push_back(at::isFloatingType(tensor.scalar_type()) ? tensor.to(at::kDouble) : tensor);
  return wide;
}

// A control passes when it passes verification (torch/compare.h) against both trials of the timed distribution. Not
// also on verification's signed trials: a candidate that sees inputs of the timed distribution can answer with the
// control there and compute only when checked.
template <typename MakeControl>
bool control_passes(const Trial& a, const Trial& a_other, size_t k, const Tolerance& tolerance,
                    MakeControl&& make_control) {
  for (const Trial* trial : {&a, &a_other}) {
    std::optional<at::Tensor> control = make_control(*trial);
    if (!control || !compare_output(*control, trial->outputs[k], tolerance).ok) return false;
  }
  return true;
}

std::string tolerance_text(const Tolerance& tolerance) {
  return " on the timed inputs (atol " + number(tolerance.atol) + ", rtol " + number(tolerance.rtol) + ")";
}

}  // namespace

std::string number(double value, const char* format) {
  char text[32];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

Step check_random_ops(const Json& meta) {
  for (const auto& op : meta.value("ops", Json::array())) {
    if (op.is_string() && is_random_op(op.get<std::string>())) {
      return Reject{RejectReason::random_op, op.get<std::string>() + " draws random numbers"};
    }
  }
  return std::nullopt;
}

Step check_deterministic(const Outputs& first, const Outputs& second, uint64_t seed) {
  if (same_outputs(first, second)) return std::nullopt;
  return Reject{RejectReason::nondeterministic,
                "two runs on the same inputs (seed " + std::to_string(seed) + ") give different outputs"};
}

Step check_finite(const Outputs& outputs) {
  for (size_t k = 0; k < outputs.size(); ++k) {
    const at::Tensor& out = outputs[k];
    if (at::isFloatingType(out.scalar_type()) && !at::isfinite(out).all().item<bool>()) {
      int64_t bad = at::logical_not(at::isfinite(out)).sum().item<int64_t>();
      return Reject{RejectReason::non_finite, "output " + std::to_string(k) + " has " + std::to_string(bad) + " of " +
                                                  std::to_string(out.numel()) + " elements NaN or Inf"};
    }
  }
  return std::nullopt;
}

Step check_zeros_control(const Trial& a, const Trial& a_other, const Tolerance& tolerance) {
  for (size_t k = 0; k < a.outputs.size(); ++k) {
    auto zeros = [&](const Trial& trial) -> std::optional<at::Tensor> { return at::zeros_like(trial.outputs[k]); };
    if (control_passes(a, a_other, k, tolerance, zeros)) {
      return Reject{RejectReason::control_zeros,
                    "output " + std::to_string(k) + ": all zeros pass verification" + tolerance_text(tolerance) +
                        "; max |ref| " + number(a.outputs[k].numel() ? a.outputs[k].abs().max().item<double>() : 0.0)};
    }
  }
  return std::nullopt;
}

Step check_not_constant(const Trial& a, const Trial& b) {
  for (size_t k = 0; k < a.outputs.size(); ++k) {
    const at::Tensor& out = a.outputs[k];
    const std::string name = "output " + std::to_string(k);
    if (out.numel() == 0) return Reject{RejectReason::degenerate_constant, name + " is empty"};
    if (out.numel() > 1 && at::eq(out.flatten(), out.flatten()[0]).all().item<bool>()) {
      return Reject{
          RejectReason::degenerate_constant,
          name + ": all " + std::to_string(out.numel()) + " elements equal " + number(out.flatten()[0].item<double>())};
    }
    if (out.numel() == 1 && same_bits(out, b.outputs[k])) {
      return Reject{RejectReason::degenerate_constant,
                    name + ": its one element is " + number(out.item<double>()) + " for two different seeds"};
    }
  }
  return std::nullopt;
}

Step check_uses_every_tensor(const Program& program, const Trial& a, const RunProgram& run, uint64_t seed,
                             const at::Device& device, std::vector<std::string>& unperturbed) {
  const size_t tensor_count = program.inputs.size() + program.params.size();
  for (size_t i = 0; i < tensor_count; ++i) {
    auto fresh = perturbed(program, a.tensors, i, seed, device);
    if (!fresh) {
      unperturbed.push_back(spec_at(program, i).name);
      continue;
    }
    std::vector<at::Tensor> tensors = a.tensors;
    tensors[i] = *fresh;
    auto outputs = run(tensors);
    if (outputs && same_outputs(a.outputs, *outputs)) {
      return Reject{RejectReason::ignores_input, "no output changes when " + label(program, i) + " is redrawn"};
    }
  }
  return std::nullopt;
}

Step check_mean_and_passthrough_controls(const Program& program, const Trial& a, const Trial& a_other,
                                         const Tolerance& tolerance) {
  const size_t tensor_count = program.inputs.size() + program.params.size();
  for (size_t k = 0; k < a.outputs.size(); ++k) {
    // Each trial's constant is the mean of the other seed's output: what a candidate can know in advance.
    auto mean_of = [&](const Trial& trial) -> std::optional<at::Tensor> {
      const at::Tensor& other = (&trial == &a ? a_other : a).outputs[k];
      at::Tensor finite = other.to(at::kDouble);
      finite = at::where(at::isfinite(finite), finite, at::zeros_like(finite));
      return at::full_like(trial.outputs[k], finite.mean().item<double>());
    };
    if (control_passes(a, a_other, k, tolerance, mean_of)) {
      return Reject{RejectReason::control_mean, "output " + std::to_string(k) +
                                                    ": a constant equal to its mean on another seed (" +
                                                    number(mean_of(a)->flatten()[0].item<double>()) +
                                                    ") passes verification" + tolerance_text(tolerance)};
    }
    for (size_t i = 0; i < tensor_count; ++i) {
      auto pass_through = [&](const Trial& trial) -> std::optional<at::Tensor> {
        const at::Tensor& tensor = trial.tensors[i];
        if (tensor.sizes() != trial.outputs[k].sizes() || tensor.scalar_type() != trial.outputs[k].scalar_type())
          return std::nullopt;
        return tensor;
      };
      if (control_passes(a, a_other, k, tolerance, pass_through)) {
        return Reject{RejectReason::control_passthrough, "output " + std::to_string(k) + ": " + label(program, i) +
                                                             " passed through passes verification" +
                                                             tolerance_text(tolerance)};
      }
    }
  }
  return std::nullopt;
}

Comparison rounding_error(const at::Tensor& exact, const at::Tensor& ref, const Tolerance& tolerance, double share) {
  return compare_output(exact.to(ref.scalar_type()), ref, Tolerance{tolerance.atol * share, tolerance.rtol * share});
}

Step check_rounding_noise(const Trial& a, const Trial& b, const RunProgram& run, const Tolerance& tolerance,
                          double share, double& rounding, std::vector<std::string>& flags) {
  if (share <= 0) return std::nullopt;
  for (const Trial* trial : {&a, &b}) {
    auto exact = run(in_float64(trial->tensors));
    if (!exact) {
      flags.push_back("noise-unmeasured: the float64 run fails: " + exact.error());
      return std::nullopt;
    }
    for (size_t k = 0; k < trial->outputs.size() && k < exact->size(); ++k) {
      const at::Tensor& ref = trial->outputs[k];
      if ((*exact)[k].sizes() != ref.sizes()) continue;
      Comparison c = rounding_error((*exact)[k], ref, tolerance, share);
      rounding = std::max(rounding, c.rel_l2);
      if (c.ok) continue;
      return Reject{RejectReason::noise_output,
                    "output " + std::to_string(k) + ": rounding noise" + (trial == &b ? " on signed inputs" : "") +
                        ": the float64 run, rounded, fails verification at " + number(share) + " of the tolerance: " +
                        c.message + "; max |ref| " + number(ref.to(at::kDouble).abs().max().item<double>())};
    }
  }
  return std::nullopt;
}

std::vector<std::string> tiny_output_flags(const Outputs& outputs, double atol) {
  std::vector<std::string> flags;
  for (size_t k = 0; k < outputs.size(); ++k) {
    const at::Tensor& out = outputs[k];
    if (!at::isFloatingType(out.scalar_type()) || out.numel() == 0) continue;
    double largest = out.abs().max().item<double>();
    if (largest < atol) {
      flags.push_back("tiny-output: output " + std::to_string(k) + " max |ref| " + number(largest) + " < atol " +
                      number(atol));
    }
  }
  return flags;
}

Step check_runtime_window(double median_ms, size_t calls, double min_ms, double max_ms) {
  const std::string window =
      " (window " + number(min_ms) + "-" + number(max_ms) + " ms, median of " + std::to_string(calls) + " calls)";
  if (min_ms > 0 && median_ms < min_ms)
    return Reject{RejectReason::too_fast, "eager " + number(median_ms) + " ms" + window};
  if (max_ms > 0 && median_ms > max_ms)
    return Reject{RejectReason::too_slow, "eager " + number(median_ms) + " ms" + window};
  return std::nullopt;
}

Step check_compiled_outputs(const Outputs& compiled, const Outputs& eager, const Tolerance& tolerance) {
  for (size_t k = 0; k < eager.size() && k < compiled.size(); ++k) {
    Comparison c = compare_output(compiled[k], eager[k], tolerance);
    if (!c.ok) {
      return Reject{RejectReason::compile_error,
                    "compiled output " + std::to_string(k) + " differs from eager: " + c.message};
    }
  }
  return std::nullopt;
}

}  // namespace ca
