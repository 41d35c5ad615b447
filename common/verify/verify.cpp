#include "verify/verify.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "runner/protocol.h"
#include "timing/lease.h"
#include "torch/compare.h"
#include "torch/interpreter.h"
#include "torch/runner_calls.h"
#include "torch/runtime.h"
#include "torch/task_check.h"
#include "torch/tensors.h"
#include "util/atomic_file.h"
#include "util/exceptions.h"
#include "util/progress.h"
#include "verify/candidates.h"

namespace ca {
namespace {

using Error = std::unexpected<std::string>;

Json verdict(bool ok, std::string stage, std::string message) {
  return {{"ok", ok},
          {"stage", std::move(stage)},
          {"message", std::move(message)},
          {"trials", Json::array()},
          {"checks", Json::object()}};
}

/// The runner's trials of `library` and their comparison with the reference: {ok, stage, message, trials, checks}
/// with checks load, run, launch (cuda) and compare as far as they got. The caller holds the device's lease through
/// it (the reference runs included); the build happens outside it.
std::expected<Json, std::string> judge_trials(TaskProgram& task, const std::string& library,
                                              const std::vector<RunnerCall>& calls, const VerifyOptions& options,
                                              ProgressSteps& progress) {
  const Program& program = task.interpreter.program();
  RunnerOptions runner{options.build.backend, options.limits, options.runner, options.num_threads};
  progress.step("running " + std::to_string(calls.size()) + " trials");
  auto ran = run_in_runner(program, task.shapes, library, calls, runner);
  if (!ran) return Error(ran.error());
  Json result = verdict(true, "", "");
  if (!ran->load_error.empty()) {
    result.update(verdict(false, "load", ran->load_error), false);
    result["checks"]["load"] = false;
    return result;
  }
  result["checks"]["load"] = true;

  at::Device device = options.build.backend == Backend::cuda ? at::Device(at::kCUDA) : at::Device(at::kCPU);
  Json trials = Json::array();
  for (size_t i = 0; i < calls.size(); ++i) {
    std::string trial = "trial " + std::to_string(i + 1) + "/" + std::to_string(calls.size());
    std::string failure_stage, failure;
    if (auto failed = call_failure(*ran, i, trial, runner)) {
      failure_stage = failed->stage;
      failure = failed->message;
    }
    Json entry = {{"seed", calls[i].seed}, {"signed_inputs", calls[i].signed_inputs}};
    if (failure.empty()) {
      auto reference = task.interpreter.run(
          make_tensors(calls[i].signed_inputs ? with_signed_inputs(program) : program, calls[i].seed, device));
      if (!reference) return Error("reference failed on " + trial + ": " + reference.error());
      const std::vector<at::Tensor>& outputs = ran->calls[i].outputs;
      double max_abs = 0, max_rel = 0, rel_l2 = 0;
      for (size_t k = 0; k < outputs.size() && failure.empty(); ++k) {
        Comparison c = compare_output(outputs[k], (*reference)[k], options.tolerance);
        max_abs = std::max(max_abs, c.max_abs);
        max_rel = std::max(max_rel, c.max_rel);
        rel_l2 = std::max(rel_l2, c.rel_l2);
        if (!c.ok) {
          failure_stage = "compare";
          failure = trial + (calls[i].signed_inputs ? " (signed inputs)" : "") + ", output " + std::to_string(k) +
                    ": " + c.message;
        }
      }
      entry.update({{"max_abs", max_abs}, {"max_rel", max_rel}, {"rel_l2", rel_l2}});
    }
    entry["ok"] = failure.empty();
    trials.push_back(entry);
    if (!failure.empty()) {
      result["trials"] = trials;
      result["ok"] = false;
      result["stage"] = failure_stage;
      result["message"] = failure;
      result["checks"]["run"] = failure_stage == "launch" || failure_stage == "compare";
      if (options.build.backend == Backend::cuda) result["checks"]["launch"] = failure_stage == "compare";
      result["checks"]["compare"] = false;
      return result;
    }
  }
  result["trials"] = trials;
  result["checks"]["run"] = true;
  if (options.build.backend == Backend::cuda) result["checks"]["launch"] = true;
  result["checks"]["compare"] = true;
  return result;
}

}  // namespace

bool says_out_of_memory(const std::string& message) {
  std::string lower = message;
  // CUDA's driver API spells it CUDA_ERROR_OUT_OF_MEMORY.
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return c == '_' ? ' ' : char(std::tolower(c)); });
  return lower.find("out of memory") != std::string::npos;
}

bool a_neighbour_may_cause(const Json& verify) {
  if (verify.value("ok", true)) return false;
  std::string stage = verify.value("stage", "");
  if (stage == "timeout") return true;
  return (stage == "load" || stage == "run" || stage == "launch") && says_out_of_memory(verify.value("message", ""));
}

std::expected<Json, std::string> verify_candidate(const Json& task, const Json& candidate,
                                                  const VerifyOptions& options) {
  auto task_program = load_task_program(task);
  if (!task_program) return Error(task_program.error());
  auto files = candidate_files(candidate);
  if (!files) return verdict(false, "static", files.error());

  ProgressSteps progress("verify");  // a terminal sees where the time goes (issue 24 item 6)
  progress.step("building the candidate");
  auto built = build_candidate(*files, options.build);
  if (!built) return Error(built.error());
  Json result = verdict(true, "", "");
  result["build"] = {{"key", built->key}, {"cached", built->cached}};
  result["tolerance"] = {{"atol", options.tolerance.atol}, {"rtol", options.tolerance.rtol}};
  result["checks"]["static"] = built->stage != "static";
  if (!built->ok) {
    result["checks"]["compile"] = built->stage != "compile";
    result.update(verdict(false, built->stage, built->message), /*merge_objects=*/false);
    result["checks"] = {{"static", built->stage != "static"}, {"compile", false}};
    return result;
  }
  result["checks"]["compile"] = true;

  SeedSource source(options.seed);
  std::vector<uint64_t> seeds;
  for (int i = 0; i < options.trials; ++i) seeds.push_back(source.next());
  std::vector<RunnerCall> calls;
  for (size_t i = 0; i < seeds.size(); ++i) calls.push_back({seeds[i], i % 2 == 1});
  // Trials share the device with other jobs: the lease shared, so that they run together but not while a profile
  // times (a spinning trial would skew it). A failure one of them could have caused (docs/EXPLOITS.md, "Shares") is
  // judged again with the device to itself (the lease exclusive), and that verdict stands.
  const bool on_cuda = options.build.backend == Backend::cuda;
  auto attempt = [&](LeaseMode mode) -> std::expected<Json, std::string> {
    progress.step(mode == LeaseMode::shared ? "waiting for the device" : "waiting for the device to itself");
    auto lease = DeviceLease::acquire(on_cuda ? "cuda0" : "cpu", options.lock_dir, mode);
    if (!lease) return Error(lease.error());
    DeviceMemoryReturn give_back(on_cuda);
    try {
      return judge_trials(*task_program, built->library, calls, options, progress);
    } catch (const std::exception& e) {  // this side's own CUDA out-of-memory (a reference, a comparison)
      if (!says_out_of_memory(e.what())) throw;
      return Error(current_exception_text());
    }
  };
  auto judged = attempt(LeaseMode::shared);
  if (on_cuda && (judged ? a_neighbour_may_cause(*judged) : says_out_of_memory(judged.error()))) {
    std::string first = judged ? judged->value("message", "") : judged.error();
    judged = attempt(LeaseMode::exclusive);
    if (judged) (*judged)["judged_alone"] = {{"first_failure", first}};
  }
  if (!judged) return Error(judged.error());
  Json checks = std::move(result["checks"]);
  checks.update((*judged)["checks"]);
  result.update(*judged);
  result["checks"] = std::move(checks);
  return result;
}

std::string agent_report(const Json& verify) {
  std::string report;
  bool ok = verify.value("ok", false);
  std::string failed_stage = verify.value("stage", "");
  const Json& checks = verify["checks"];
  for (std::string step : {"static", "compile", "load", "run", "timeout", "launch", "compare"}) {
    if (!ok && step == failed_stage) {
      report += "[FAIL] " + step + ": " + verify.value("message", "") + "\n";
      break;
    }
    if (!checks.contains(step) || !checks[step].get<bool>()) continue;
    report += "[PASS] " + step;
    if (step == "compare") {
      report += ": " + std::to_string(verify["trials"].size()) + " trials within atol " +
                verify["tolerance"]["atol"].dump() + ", rtol " + verify["tolerance"]["rtol"].dump();
    }
    report += "\n";
  }
  return report;
}

}  // namespace ca
