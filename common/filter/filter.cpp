#include "filter/filter.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <ATen/core/dispatch/Dispatcher.h>

#include "aten/interpreter.h"
#include "aten/op_catalog.h"
#include "aten/runner_calls.h"
#include "aten/task_check.h"
#include "aten/tensors.h"
#include "timing/lease.h"
#include "util/json_field.h"

namespace ca {
namespace {

const char* const k_names[] = {"eager-error",   "random-op",     "duplicate",           "contaminated",
                               "nondeterministic", "non-finite", "control-zeros",       "degenerate-constant",
                               "ignores-input", "control-mean",  "control-passthrough", "noise-output", "too-fast",
                               "too-slow",      "compile-error", "near-duplicate"};

std::string number(double value, const char* format = "%.4g") {
  char text[32];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

bool contains(std::string_view text, std::string_view part) { return text.find(part) != std::string_view::npos; }

struct Reject {
  RejectReason reason;
  std::string detail;
};

using Outputs = std::vector<at::Tensor>;

std::string tensor_label(const Program& program, size_t index) {
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
    case Dist::randint: return init.dist != Dist::uniform || init.a != init.b;
    default: return false;
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

double median_of(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

// The same values in float64 (floating tensors only): a run on them stands in for the exact output.
std::vector<at::Tensor> in_float64(const std::vector<at::Tensor>& tensors) {
  std::vector<at::Tensor> wide;
  for (const at::Tensor& tensor : tensors) wide.push_back(at::isFloatingType(tensor.scalar_type()) ? tensor.to(at::kDouble) : tensor);
  return wide;
}

// One trial: the tensors a task run gets, and the reference outputs.
struct Trial {
  std::vector<at::Tensor> tensors;
  Outputs outputs;
};

}  // namespace

std::string reason_name(RejectReason reason) { return k_names[static_cast<int>(reason)]; }

std::vector<std::string> reason_names() { return {std::begin(k_names), std::end(k_names)}; }

Comparison rounding_error(const at::Tensor& exact, const at::Tensor& ref, const Tolerance& tolerance, double share) {
  return compare_output(exact.to(ref.scalar_type()), ref, Tolerance{tolerance.atol * share, tolerance.rtol * share});
}

bool is_random_op(std::string_view qualified) {
  auto [name, overload] = split_op_name(qualified);
  auto handle = c10::Dispatcher::singleton().findSchema({name, overload});
  if (handle && seeded_random(*handle)) return true;
  std::string_view base = name;
  if (auto colons = base.find("::"); colons != std::string_view::npos) base.remove_prefix(colons + 2);
  for (std::string_view part : {"rand", "dropout", "bernoulli", "multinomial", "normal", "poisson", "uniform",
                                "exponential", "geometric", "cauchy", "binomial", "dirichlet", "standard_gamma"}) {
    if (contains(base, part)) return true;
  }
  return false;
}

TaskFilter::TaskFilter(FilterOptions options) : m_options(std::move(options)) {}

std::expected<void, std::string> TaskFilter::add_reference(const Json& record) {
  if (!record.is_object()) return std::unexpected("expected a JSON object");
  auto id = string_field(record, "id", "");
  if (!id) return std::unexpected(id.error());
  auto program_json = require_field(record, "program", "");
  if (!program_json) return std::unexpected(program_json.error());
  auto program = parse_program(**program_json, "program");
  if (!program) return std::unexpected(program.error());
  m_references.add(*id, *program);
  return {};
}

void TaskFilter::precompile(const std::vector<std::string>& inputs, unsigned jobs) {
  if (!m_options.compile) return;
  std::vector<Program> programs;
  for (const auto& path : inputs) {
    auto reader = JsonlReader::open(path);
    if (!reader) continue;
    Record record;
    std::string message;
    for (auto status = reader->next(record, message); status != JsonlReader::Status::end && status != JsonlReader::Status::io_error;
         status = reader->next(record, message)) {
      if (status != JsonlReader::Status::record || !record.value.is_object() || record.value.value("kind", "") != "task") continue;
      // The program as judge() will compile it: after check_task has completed the record.
      auto checked = check_task(record.value);
      if (!checked) continue;
      if (auto program = parse_program((*checked)["program"], "program")) programs.push_back(std::move(*program));
    }
  }
  std::vector<const Program*> pointers;
  for (const auto& program : programs) pointers.push_back(&program);
  auto states = compile_missing(pointers, m_options.device, m_options.compiled, jobs);
  for (size_t i = 0; i < states.size(); ++i) {
    if (states[i]) continue;
    if (auto key = compiled_key_text(programs[i], m_options.device, m_options.compiled)) m_compile_errors[*key] = states[i].error();
  }
}

std::expected<Verdict, std::string> TaskFilter::judge(const Json& record) {
  if (!record.is_object()) return std::unexpected("expected a JSON object, got " + json_type(record));
  auto kind = string_field(record, "kind", "");
  if (!kind) return std::unexpected(kind.error());
  if (*kind != "task") return std::unexpected("kind: expected \"task\", got \"" + *kind + "\"");
  auto id = string_field(record, "id", "");
  if (!id) return std::unexpected(id.error());
  if (auto program = require_field(record, "program", ""); !program) return std::unexpected(program.error());

  Verdict verdict;
  verdict.record = record;
  auto reject = [&](RejectReason reason, std::string detail) {
    verdict.reason = reason;
    verdict.detail = detail;
    verdict.record["reject"] = {{"reason", reason_name(reason)}, {"detail", std::move(detail)}};
    return verdict;
  };

  // Runs in eager: structure, schemas, weight files, shapes.
  auto checked = check_task(record);
  if (!checked) return reject(RejectReason::eager_error, checked.error());
  verdict.record = *checked;
  // verdict.record is an ordered_json (a vector underneath): a reference into it dies when a key is added.
  auto meta = [&]() -> Json& { return verdict.record["meta"]; };
  auto program = parse_program(verdict.record["program"], "program");
  if (!program) return reject(RejectReason::eager_error, program.error());
  auto interpreter = Interpreter::create(*program);
  if (!interpreter) return reject(RejectReason::eager_error, interpreter.error());

  for (const auto& op : meta().value("ops", Json::array())) {
    if (op.is_string() && is_random_op(op.get<std::string>())) {
      return reject(RejectReason::random_op, op.get<std::string>() + " draws random numbers");
    }
  }

  const std::string fingerprint = meta().value("fingerprint", "");
  if (auto first = m_fingerprints.find(fingerprint); first != m_fingerprints.end()) {
    return reject(RejectReason::duplicate, "same fingerprint as " + first->second);
  }
  m_fingerprints.emplace(fingerprint, *id);

  Json similarity = nullptr;
  if (auto match = m_references.best_match(*program)) {
    similarity = {{"id", match->id}, {"value", match->similarity}};
    if (match->similarity >= m_options.max_similarity) {
      return reject(RejectReason::contaminated, "op-shingle similarity " + number(match->similarity, "%.2f") + " to " +
                                                    match->id + " (ops: " + match->ops + ")");
    }
  }

  const at::Device& device = m_options.device;
  uint64_t task_seed = record.contains("seed") && record["seed"].is_number_unsigned() ? record["seed"].get<uint64_t>() : 0;
  const uint64_t seed = task_seed + m_options.seed;
  auto run = [&](const std::vector<at::Tensor>& tensors) { return interpreter->run(tensors); };

  // Shared, as ca-verify's: the runs and the timing below use the device, and must not share it with a profile's
  // timing (which would skew both), while other filter and verify jobs may run beside them.
  auto lease = DeviceLease::acquire(device.is_cuda() ? "cuda0" : "cpu", m_options.lock_dir, LeaseMode::shared);
  if (!lease) return std::unexpected(lease.error());

  // Deterministic: two runs on the same (separately made) inputs agree bit for bit.
  Trial a{make_tensors(*program, seed, device), {}};
  auto first = run(a.tensors);
  if (!first) return reject(RejectReason::eager_error, first.error());
  a.outputs = std::move(*first);
  auto second = run(make_tensors(*program, seed, device));
  if (!second) return reject(RejectReason::eager_error, "second run: " + second.error());
  if (!same_outputs(a.outputs, *second)) {
    return reject(RejectReason::nondeterministic, "two runs on the same inputs (seed " + std::to_string(seed) +
                                                      ") give different outputs");
  }

  for (size_t k = 0; k < a.outputs.size(); ++k) {
    const at::Tensor& out = a.outputs[k];
    if (at::isFloatingType(out.scalar_type()) && !at::isfinite(out).all().item<bool>()) {
      int64_t bad = at::logical_not(at::isfinite(out)).sum().item<int64_t>();
      return reject(RejectReason::non_finite, "output " + std::to_string(k) + " has " + std::to_string(bad) + " of " +
                                                  std::to_string(out.numel()) + " elements NaN or Inf");
    }
  }

  // The second trial, as ca-verify's odd trials: another seed, inputs drawn rand from [-1, 1) instead of [0, 1).
  Program signed_program = with_signed_inputs(*program);
  Trial b{make_tensors(signed_program, seed + 1, device), {}};
  auto second_trial = run(b.tensors);
  if (!second_trial) return reject(RejectReason::eager_error, "signed inputs: " + second_trial.error());
  b.outputs = std::move(*second_trial);

  // A control passes verification when it passes both trials, as a candidate must (aten/compare.h).
  auto control_passes = [&](size_t k, auto&& make_control) {
    for (const Trial* trial : {&a, &b}) {
      std::optional<at::Tensor> control = make_control(*trial);
      if (!control || !compare_output(*control, trial->outputs[k], m_options.tolerance).ok) return false;
    }
    return true;
  };
  const std::string tolerance_text = " (atol " + number(m_options.tolerance.atol) + ", rtol " + number(m_options.tolerance.rtol) + ")";
  for (size_t k = 0; k < a.outputs.size(); ++k) {
    if (control_passes(k, [&](const Trial& trial) -> std::optional<at::Tensor> { return at::zeros_like(trial.outputs[k]); })) {
      return reject(RejectReason::control_zeros, "output " + std::to_string(k) + ": all zeros pass verification" +
                                                     tolerance_text + "; max |ref| " +
                                                     number(a.outputs[k].numel() ? a.outputs[k].abs().max().item<double>() : 0.0));
    }
  }

  for (size_t k = 0; k < a.outputs.size(); ++k) {
    const at::Tensor& out = a.outputs[k];
    if (out.numel() == 0) return reject(RejectReason::degenerate_constant, "output " + std::to_string(k) + " is empty");
    if (out.numel() > 1 && at::eq(out.flatten(), out.flatten()[0]).all().item<bool>()) {
      return reject(RejectReason::degenerate_constant, "output " + std::to_string(k) + ": all " + std::to_string(out.numel()) +
                                                           " elements equal " + number(out.flatten()[0].item<double>()));
    }
    if (out.numel() == 1 && same_bits(out, b.outputs[k])) {
      return reject(RejectReason::degenerate_constant, "output " + std::to_string(k) + ": its one element is " +
                                                           number(out.item<double>()) + " for two different seeds");
    }
  }

  // Depends on every input and param: redrawing any one of them changes some output.
  const size_t tensor_count = program->inputs.size() + program->params.size();
  Json unperturbed = Json::array();
  for (size_t i = 0; i < tensor_count; ++i) {
    auto fresh = perturbed(*program, a.tensors, i, seed + 0x9E3779B97F4A7C15ull, device);
    if (!fresh) {
      unperturbed.push_back(spec_at(*program, i).name);
      continue;
    }
    std::vector<at::Tensor> tensors = a.tensors;
    tensors[i] = *fresh;
    auto outputs = run(tensors);
    if (outputs && same_outputs(a.outputs, *outputs)) {
      return reject(RejectReason::ignores_input, "no output changes when " + tensor_label(*program, i) + " is redrawn");
    }
  }

  // The mean control's constant is what a candidate could know in advance: the mean of the output on another seed
  // of the same distribution (for a one-element output its own value would be the answer itself). Outputs of
  // reductions over many iid values pass it (EXPLOITS B8).
  Trial a_other{make_tensors(*program, seed + 2, device), {}};
  Trial b_other{make_tensors(signed_program, seed + 3, device), {}};
  for (Trial* trial : {&a_other, &b_other}) {
    auto outputs = run(trial->tensors);
    if (!outputs) return reject(RejectReason::eager_error, outputs.error());
    trial->outputs = std::move(*outputs);
  }
  for (size_t k = 0; k < a.outputs.size(); ++k) {
    auto mean_of = [&](const Trial& trial) -> std::optional<at::Tensor> {
      const at::Tensor& other = (&trial == &a ? a_other : b_other).outputs[k];
      at::Tensor finite = other.to(at::kDouble);
      finite = at::where(at::isfinite(finite), finite, at::zeros_like(finite));
      return at::full_like(trial.outputs[k], finite.mean().item<double>());
    };
    if (control_passes(k, mean_of)) {
      return reject(RejectReason::control_mean, "output " + std::to_string(k) + ": a constant equal to its mean on another seed (" +
                                                    number(mean_of(a)->flatten()[0].item<double>()) +
                                                    ") passes verification" + tolerance_text);
    }
    for (size_t i = 0; i < tensor_count; ++i) {
      auto pass_through = [&](const Trial& trial) -> std::optional<at::Tensor> {
        const at::Tensor& tensor = trial.tensors[i];
        if (tensor.sizes() != trial.outputs[k].sizes() || tensor.scalar_type() != trial.outputs[k].scalar_type()) return std::nullopt;
        return tensor;
      };
      if (control_passes(k, pass_through)) {
        return reject(RejectReason::control_passthrough, "output " + std::to_string(k) + ": " + tensor_label(*program, i) +
                                                             " passed through passes verification" + tolerance_text);
      }
    }
  }

  // The output must be more than the reference's own rounding. A float64 run on the same values stands in for the
  // exact output; rounded to the output's dtype it is what a perfect kernel returns. Where that fails verification at
  // rounding_share of the tolerance, the output is mostly rounding noise (KernelBench L2-23: the mean of a
  // group-normalized tensor, exactly 0, comes out as +-1e-8): allclose passes any near-constant, the normalized error
  // fails every control and also a correct kernel that sums in another order, so no verdict on it means anything.
  // Both trials, as a candidate must pass both.
  Json flags = Json::array();
  double rounding = 0;  // largest normalized error of the rounded float64 run, over outputs and trials
  for (const Trial* trial : {&a, &b}) {
    if (m_options.rounding_share <= 0) break;
    auto exact = run(in_float64(trial->tensors));
    if (!exact) {
      flags.push_back("noise-unmeasured: the float64 run fails: " + exact.error());
      break;
    }
    for (size_t k = 0; k < trial->outputs.size() && k < exact->size(); ++k) {
      const at::Tensor& ref = trial->outputs[k];
      if ((*exact)[k].sizes() != ref.sizes()) continue;
      Comparison c = rounding_error((*exact)[k], ref, m_options.tolerance, m_options.rounding_share);
      rounding = std::max(rounding, c.rel_l2);
      if (c.ok) continue;
      return reject(RejectReason::noise_output,
                    "output " + std::to_string(k) + ": rounding noise" + (trial == &b ? " on signed inputs" : "") +
                        ": the float64 run, rounded, fails verification at " + number(m_options.rounding_share) +
                        " of the tolerance: " + c.message + "; max |ref| " + number(ref.to(at::kDouble).abs().max().item<double>()));
    }
  }

  // Flagged, not rejected (EXPLOITS B6): an output smaller than atol everywhere, where allclose alone would let zeros
  // pass; ca-verify's normalized error is what stops them.
  for (size_t k = 0; k < a.outputs.size(); ++k) {
    const at::Tensor& out = a.outputs[k];
    if (!at::isFloatingType(out.scalar_type())) continue;
    double largest = out.abs().max().item<double>();
    if (largest < m_options.tolerance.atol) {
      flags.push_back("tiny-output: output " + std::to_string(k) + " max |ref| " + number(largest) + " < atol " +
                      number(m_options.tolerance.atol));
    }
  }

  // Runtime: the one timing method (timing/clock.h, as ca-profile): cache flushed before each call, median.
  if (!m_clock) {
    if (device.is_cuda()) {
      auto made = make_cuda_clock(device.has_index() ? device.index() : 0, nullptr);
      if (!made) return std::unexpected(made.error());
      m_clock = std::move(*made);
    } else {
      m_clock = make_cpu_clock();
    }
  }
  auto time_calls = [&](auto&& call) -> std::expected<std::vector<double>, std::string> {
    std::vector<double> times;
    for (int i = 0; i <= m_options.timed_calls; ++i) {  // call 0 warms up
      m_clock->prepare();
      m_clock->start();
      auto outputs = call(a.tensors);
      ClockSample sample = m_clock->stop();
      if (!outputs) return std::unexpected(outputs.error());
      if (i > 0) times.push_back(counted_us(sample) / 1000.0);
      // Far outside the window already: more calls would not change the verdict.
      if (i > 0 && m_options.max_ms > 0 && times.back() > 10 * m_options.max_ms) break;
    }
    return times;
  };
  auto eager_times = time_calls(run);
  if (!eager_times) return reject(RejectReason::eager_error, "timed run: " + eager_times.error());
  const double eager_ms = median_of(*eager_times);
  meta()["eager_ms"] = eager_ms;
  const std::string window = " (window " + number(m_options.min_ms) + "-" + number(m_options.max_ms) + " ms, median of " +
                             std::to_string(eager_times->size()) + " calls)";
  if (m_options.min_ms > 0 && eager_ms < m_options.min_ms) {
    return reject(RejectReason::too_fast, "eager " + number(eager_ms) + " ms" + window);
  }
  if (m_options.max_ms > 0 && eager_ms > m_options.max_ms) {
    return reject(RejectReason::too_slow, "eager " + number(eager_ms) + " ms" + window);
  }

  Json compile_info = nullptr;
  if (m_options.compile) {
    if (auto key = compiled_key_text(*program, device, m_options.compiled); key) {
      if (auto failed = m_compile_errors.find(*key); failed != m_compile_errors.end()) {
        return reject(RejectReason::compile_error, failed->second);
      }
    }
    auto compiled = CompiledProgram::load_or_compile(*program, device, m_options.compiled);
    if (!compiled) return reject(RejectReason::compile_error, compiled.error());
    auto outputs = compiled->run(a.tensors);
    if (!outputs) return reject(RejectReason::compile_error, outputs.error());
    for (size_t k = 0; k < a.outputs.size() && k < outputs->size(); ++k) {
      Comparison c = compare_output((*outputs)[k], a.outputs[k], m_options.tolerance);
      if (!c.ok) return reject(RejectReason::compile_error, "compiled output " + std::to_string(k) + " differs from eager: " + c.message);
    }
    auto compile_times = time_calls([&](const std::vector<at::Tensor>& tensors) { return compiled->run(tensors); });
    if (!compile_times) return reject(RejectReason::compile_error, "timed run: " + compile_times.error());
    meta()["compile_ms"] = median_of(*compile_times);
    compile_info = {{"key", compiled->key()}, {"cached", compiled->cached()}, {"seconds", compiled->compile_seconds()}};
  }

  const std::string key = near_duplicate_key(*program);
  if (auto kept = m_kept_keys.find(key); kept != m_kept_keys.end()) {
    return reject(RejectReason::near_duplicate, "same op sequence and input/param shapes as " + kept->second +
                                                    " (only literals or inits differ)");
  }
  m_kept_keys.emplace(key, *id);

  Json filter = {{"device", device.str()},
                 {"seed", seed},
                 {"eager_calls", eager_times->size()},
                 {"window_ms", {m_options.min_ms, m_options.max_ms}},
                 {"tolerance", {{"atol", m_options.tolerance.atol}, {"rtol", m_options.tolerance.rtol}}},
                 {"compiled", m_options.compile}};
  if (!compile_info.is_null()) filter["compile"] = compile_info;
  if (!similarity.is_null()) filter["nearest_reference"] = similarity;
  if (!unperturbed.empty()) filter["not_perturbed"] = unperturbed;
  if (m_options.rounding_share > 0) filter["rounding"] = rounding;
  if (!flags.empty()) filter["flags"] = flags;
  verdict.record["filter"] = filter;
  return verdict;
}

}  // namespace ca
