#include "filter/filter.h"

#include <algorithm>
#include <optional>

#include "filter/rubric.h"
#include "timing/lease.h"
#include "torch/compiled.h"
#include "torch/interpreter.h"
#include "torch/op_catalog.h"
#include "torch/precision.h"
#include "torch/runner_calls.h"
#include "torch/runtime.h"
#include "torch/task_check.h"
#include "torch/tensors.h"
#include "util/json_field.h"

namespace ca {
namespace {

const char* const k_names[] = {"eager-error",      "random-op",    "duplicate",           "contaminated",
                               "nondeterministic", "non-finite",   "control-zeros",       "degenerate-constant",
                               "ignores-input",    "control-mean", "control-passthrough", "noise-output",
                               "too-fast",         "too-slow",     "compile-error",       "near-duplicate"};

bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

double median_of(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

at::Device device_of(Backend backend) {
  return backend == Backend::cuda ? at::Device(at::kCUDA, 0) : at::Device(at::kCPU);
}

// Times `call` on `tensors` with `clock`: one warm-up call, then options.timed_calls (fewer when far above the
// window). Returns the milliseconds of each timed call.
std::expected<std::vector<double>, std::string> time_calls(CallClock& clock, const FilterOptions& options,
                                                           const RunProgram& call,
                                                           const std::vector<at::Tensor>& tensors) {
  std::vector<double> times;
  for (int i = 0; i <= options.timed_calls; ++i) {  // call 0 warms up
    clock.prepare();
    clock.start();
    auto outputs = call(tensors);
    ClockSample sample = clock.stop();
    if (!outputs) return std::unexpected(outputs.error());
    if (i > 0) times.push_back(counted_us(sample) / 1000.0);
    // Far outside the window already: more calls would not change the verdict.
    if (i > 0 && options.max_ms > 0 && times.back() > 10 * options.max_ms) break;
  }
  return times;
}

}  // namespace

std::string reason_name(RejectReason reason) {
  return k_names[static_cast<int>(reason)];
}

std::vector<std::string> reason_names() {
  return {std::begin(k_names), std::end(k_names)};
}

bool is_random_op(std::string_view qualified) {
  if (seeded_random(qualified)) return true;
  std::string name = split_op_name(qualified).first;
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
    for (auto status = reader->next(record, message);
         status != JsonlReader::Status::end && status != JsonlReader::Status::io_error &&
         status != JsonlReader::Status::interrupted;
         status = reader->next(record, message)) {
      if (status != JsonlReader::Status::record || !record.value.is_object() ||
          record.value.value("kind", "") != "task")
        continue;
      // The program as judge() will compile it: after check_task has completed the record.
      auto checked = check_task(record.value);
      if (!checked) continue;
      if (auto program = parse_program((*checked)["program"], "program")) programs.push_back(std::move(*program));
    }
  }
  std::vector<const Program*> pointers;
  for (const auto& program : programs) pointers.push_back(&program);
  auto states = compile_missing(pointers, device_of(m_options.backend), m_options.compiled, jobs);
  for (size_t i = 0; i < states.size(); ++i) {
    if (states[i]) continue;
    if (auto key = compiled_key_text(programs[i], device_of(m_options.backend), m_options.compiled))
      m_compile_errors[*key] = states[i].error();
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
  if (auto seed = task_seed(record); !seed) return std::unexpected(seed.error());

  Verdict verdict;
  verdict.record = record;
  auto reject = [&](const Reject& why) {
    verdict.reason = why.reason;
    verdict.detail = why.detail;
    verdict.record["reject"] = {{"reason", reason_name(why.reason)}, {"detail", why.detail}};
    return verdict;
  };
  auto eager_error = [&](std::string detail) { return reject({RejectReason::eager_error, std::move(detail)}); };

  // Runs in eager: structure, schemas, weight files, shapes.
  auto checked = check_task(record);
  if (!checked) return eager_error(checked.error());
  verdict.record = *checked;
  // verdict.record is an ordered_json (a vector underneath): a reference into it dies when a key is added.
  auto meta = [&]() -> Json& { return verdict.record["meta"]; };
  auto program = parse_program(verdict.record["program"], "program");
  if (!program) return eager_error(program.error());
  auto interpreter = Interpreter::create(*program);
  if (!interpreter) return eager_error(interpreter.error());

  if (Step step = check_random_ops(meta())) return reject(*step);
  const std::string fingerprint = meta().value("fingerprint", "");
  if (auto first = m_fingerprints.find(fingerprint); first != m_fingerprints.end()) {
    return reject({RejectReason::duplicate, "same fingerprint as " + first->second});
  }
  m_fingerprints.emplace(fingerprint, *id);
  Json similarity = nullptr;
  if (auto match = m_references.best_match(*program)) {
    similarity = {{"id", match->id}, {"value", match->similarity}};
    if (match->similarity >= m_options.max_similarity) {
      return reject({RejectReason::contaminated, "op-shingle similarity " + number(match->similarity, "%.2f") + " to " +
                                                     match->id + " (ops: " + match->ops + ")"});
    }
  }

  const at::Device device = device_of(m_options.backend);
  const uint64_t seed = task_seed(record).value_or(0) + m_options.seed;  // checked above
  RunProgram run = [&](const std::vector<at::Tensor>& tensors) { return interpreter->run(tensors); };
  // Runs the trial's program on its tensors; the error names the trial.
  auto run_trial = [&](Trial& trial, const std::string& what) -> std::expected<void, std::string> {
    auto outputs = run(trial.tensors);
    if (!outputs) return std::unexpected(what + outputs.error());
    trial.outputs = std::move(*outputs);
    return {};
  };

  // Shared, as ca-verify's: the runs and the timing below use the device, and must not share it with a profile's
  // timing (which would skew both), while other filter and verify jobs may run beside them.
  auto lease = DeviceLease::acquire(device.is_cuda() ? "cuda0" : "cpu", m_options.lock_dir, LeaseMode::shared);
  if (!lease) return std::unexpected(lease.error());
  DeviceMemoryReturn give_back(device.is_cuda());

  // Every check below judges the task against references in full fp32 (the TF32 mode covers the timed baselines only,
  // docs/TIMING.md, "Precision"): TF32's own rounding must not reject a task as noise nor pass a control.
  Tf32Scope reference_precision(Tf32Mode::none);

  // Deterministic: two runs on the same (separately made) inputs agree bit for bit.
  Trial a{make_tensors(*program, seed, device), {}};
  if (auto ran = run_trial(a, ""); !ran) return eager_error(ran.error());
  Trial again{make_tensors(*program, seed, device), {}};
  if (auto ran = run_trial(again, "second run: "); !ran) return eager_error(ran.error());
  if (Step step = check_deterministic(a.outputs, again.outputs, seed)) return reject(*step);
  if (Step step = check_finite(a.outputs)) return reject(*step);

  // The second trial, as ca-verify's odd trials: another seed, inputs drawn rand from [-1, 1) instead of [0, 1).
  Program signed_program = with_signed_inputs(*program);
  Trial b{make_tensors(signed_program, seed + 1, device), {}};
  if (auto ran = run_trial(b, "signed inputs: "); !ran) return eager_error(ran.error());
  // The negative controls are judged on the distribution ca-profile times (the task's own, two seeds): a candidate can
  // tell it from verification's signed trials by its inputs, and answer with a control only there. For the mean
  // control the other seed's mean is the constant a candidate could know in advance (for a one-element output its
  // own value would be the answer itself); outputs of reductions over many iid values pass it (docs/EXPLOITS.md).
  Trial a_other{make_tensors(*program, seed + 2, device), {}};
  if (auto ran = run_trial(a_other, "another seed: "); !ran) return eager_error(ran.error());
  if (Step step = check_zeros_control(a, a_other, m_options.tolerance)) return reject(*step);
  if (Step step = check_not_constant(a, b)) return reject(*step);

  std::vector<std::string> unperturbed;
  if (Step step = check_uses_every_tensor(*program, a, run, seed + 0x9E3779B97F4A7C15ull, device, unperturbed)) {
    return reject(*step);
  }

  if (Step step = check_mean_and_passthrough_controls(*program, a, a_other, m_options.tolerance)) {
    return reject(*step);
  }

  // The output must be more than the reference's own rounding (KernelBench L2-23: the mean of a group-normalized
  // tensor, exactly 0, comes out as +-1e-8): allclose passes any near-constant, the normalized error fails every
  // control and also a correct kernel that sums in another order, so no verdict on it means anything.
  std::vector<std::string> flags;
  double rounding = 0;
  if (Step step = check_rounding_noise(a, b, run, m_options.tolerance, m_options.rounding_share, rounding, flags)) {
    return reject(*step);
  }
  // Flagged, not rejected (docs/EXPLOITS.md, B6): ca-verify's normalized error is what stops zeros there.
  std::ranges::move(tiny_output_flags(a.outputs, m_options.tolerance.atol), std::back_inserter(flags));

  // Runtime: the one timing method (timing/clock.h, as ca-profile): cache flushed before each call, median.
  if (!m_clock) {
    if (m_options.backend == Backend::cuda) {
      auto made = make_cuda_clock(0, nullptr);
      if (!made) return std::unexpected(made.error());
      m_clock = std::move(*made);
    } else {
      m_clock = make_cpu_clock();
    }
  }
  // The baselines run as PyTorch's users run them (--tf32); the record names the mode read back where eager ran.
  std::optional<Tf32Scope> baseline_precision(std::in_place, m_options.compiled.tf32);
  auto eager_times = time_calls(*m_clock, m_options, run, a.tensors);
  if (!eager_times) return eager_error("timed run: " + eager_times.error());
  const double eager_ms = median_of(*eager_times);
  meta()["eager_ms"] = eager_ms;
  meta()["precision"] = current_tf32_mode();
  if (Step step = check_runtime_window(eager_ms, eager_times->size(), m_options.min_ms, m_options.max_ms)) {
    return reject(*step);
  }

  Json compile_info = nullptr;
  if (m_options.compile) {
    auto compile_error = [&](std::string detail) { return reject({RejectReason::compile_error, std::move(detail)}); };
    if (auto key = compiled_key_text(*program, device, m_options.compiled); key) {
      if (auto failed = m_compile_errors.find(*key); failed != m_compile_errors.end())
        return compile_error(failed->second);
    }
    auto compiled = CompiledProgram::load_or_compile(*program, device, m_options.compiled);
    if (!compiled) return compile_error(compiled.error());
    auto outputs = compiled->run(a.tensors);
    if (!outputs) return compile_error(outputs.error());
    // Against the fp32 reference, as a candidate is judged: a package whose TF32 error fails the tolerance fails.
    if (Step step = check_compiled_outputs(*outputs, a.outputs, m_options.tolerance)) return reject(*step);
    auto compile_times = time_calls(
        *m_clock, m_options, [&](const std::vector<at::Tensor>& tensors) { return compiled->run(tensors); }, a.tensors);
    if (!compile_times) return compile_error("timed run: " + compile_times.error());
    meta()["compile_ms"] = median_of(*compile_times);
    compile_info = {{"key", compiled->key()}, {"cached", compiled->cached()}, {"seconds", compiled->compile_seconds()}};
  }

  baseline_precision.reset();

  const std::string key = near_duplicate_key(*program);
  if (auto kept = m_kept_keys.find(key); kept != m_kept_keys.end()) {
    return reject({RejectReason::near_duplicate,
                   "same op sequence and input/param shapes as " + kept->second + " (only literals or inits differ)"});
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

void TaskFilter::remember(const Json& verdict_record) {
  const std::string id = verdict_record.value("id", "");
  const std::string reason =
      verdict_record.contains("reject") ? verdict_record["reject"].value("reason", std::string()) : "";
  // judge() notes the fingerprint of every record that gets past the duplicate check, in RejectReason's order.
  const bool before_fingerprint = reason == reason_name(RejectReason::eager_error) ||
                                  reason == reason_name(RejectReason::random_op) ||
                                  reason == reason_name(RejectReason::duplicate);
  if (!before_fingerprint && verdict_record.contains("meta") && verdict_record["meta"].is_object())
    m_fingerprints.emplace(verdict_record["meta"].value("fingerprint", ""), id);
  if (!reason.empty() || !verdict_record.contains("program")) return;
  if (auto program = parse_program(verdict_record["program"], "program"))
    m_kept_keys.emplace(near_duplicate_key(*program), id);
}

}  // namespace ca
