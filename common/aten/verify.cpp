#include "aten/verify.h"

#include <cstring>
#include <filesystem>
#include <sys/stat.h>
#include <map>
#include <random>
#include <sstream>

#include "aten/interpreter.h"
#include "aten/tensors.h"
#include "util/atomic_file.h"
#include "runner/protocol.h"
#include "util/json_field.h"

namespace ca {
namespace {

using Error = std::unexpected<std::string>;

// EXPLOITS B4: on inputs drawn from [0, 1), ReLU-like ops are the identity.
// Odd trials draw those inputs from [-1, 1) so one-sided shortcuts fail.
Program trial_program(const Program& program, int trial) {
  Program copy = program;
  if (trial % 2 == 1) {
    for (auto& input : copy.inputs) {
      if (input.init.dist == Dist::rand) input.init = {Dist::uniform, -1, 1};
    }
  }
  return copy;
}

std::vector<uint64_t> trial_seeds(int trials, std::optional<uint64_t> seed) {
  std::vector<uint64_t> seeds;
  std::random_device device;
  std::mt19937_64 reproducible(seed.value_or(0));
  for (int i = 0; i < trials; ++i) {
    seeds.push_back(seed ? reproducible() : (uint64_t(device()) << 32) ^ device());
  }
  return seeds;
}

Json verdict(bool ok, std::string stage, std::string message) {
  return {{"ok", ok}, {"stage", std::move(stage)}, {"message", std::move(message)}, {"trials", Json::array()}, {"checks", Json::object()}};
}

// The last `count` non-empty lines of the runner's stderr, joined with "; ".
std::string last_lines(const std::string& text, size_t count) {
  std::vector<std::string> lines;
  std::istringstream stream(text);
  for (std::string line; std::getline(stream, line);) {
    if (!line.empty()) lines.push_back(line);
  }
  std::string out;
  for (size_t i = lines.size() > count ? lines.size() - count : 0; i < lines.size(); ++i) out += (out.empty() ? "" : "; ") + lines[i];
  return out;
}

std::string default_runner() {
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return (self.parent_path() / "ca-runner").string();
}

std::expected<std::map<std::string, std::string>, std::string> candidate_files(const Json& candidate) {
  auto files = require_field(candidate, "files", "");
  if (!files) return Error(files.error());
  if (!(*files)->is_object() || (*files)->empty()) return Error("files: expected an object of path -> source");
  std::map<std::string, std::string> out;
  for (auto it = (*files)->begin(); it != (*files)->end(); ++it) {
    if (!it->is_string()) return Error(field_path("files", it.key()) + ": expected the file's text");
    out[it.key()] = it->get<std::string>();
  }
  return out;
}

// Writes the runner's request: every trial is one call with its own seed.
Json runner_request(const Program& program, const std::vector<TensorShape>& shapes, const std::string& library,
                    const std::vector<uint64_t>& seeds, const std::string& run_dir, const VerifyOptions& options) {
  Json tensors = Json::array();
  Json outputs = Json::array();
  for (const auto& shape : shapes) outputs.push_back({{"dtype", dtype_name(*from_scalar_type(shape.dtype))}, {"shape", shape.sizes}});
  Json calls = Json::array();
  for (size_t i = 0; i < seeds.size(); ++i) {
    Json program_json = to_json(trial_program(program, int(i)));
    Json trial_tensors = program_json["inputs"];
    for (const auto& p : program_json["params"]) trial_tensors.push_back(p);
    calls.push_back({{"seed", seeds[i]}, {"output_file", "out-" + std::to_string(i) + ".bin"}, {"tensors", trial_tensors}});
  }
  Json program_json = to_json(program);
  for (const auto& t : program_json["inputs"]) tensors.push_back(t);
  for (const auto& t : program_json["params"]) tensors.push_back(t);
  return {{"library", library}, {"backend", backend_name(options.build.backend)}, {"device_index", 0},
          {"num_threads", options.num_threads}, {"tensors", tensors}, {"outputs", outputs}, {"calls", calls},
          {"output_dir", run_dir}};
}

}  // namespace

namespace {

// One entry per call of the request; a call without a report crashed or hung the runner.
std::expected<std::vector<std::optional<CallReport>>, std::string> read_results(const std::string& path, size_t calls,
                                                                                std::string& load_error) {
  std::vector<std::optional<CallReport>> reports(calls);
  auto text = read_file(path);
  if (!text) return reports;  // the runner died before writing anything
  auto log = parse_results(*text);
  if (!log) return Error(log.error());
  load_error = log->load_error;
  for (const auto& report : log->calls) {
    if (report.call >= calls) return Error("runner reported call " + std::to_string(report.call) + " of " + std::to_string(calls));
    reports[report.call] = report;
  }
  return reports;
}

std::vector<at::Tensor> read_outputs(const std::string& path, const std::vector<TensorShape>& shapes, std::string& problem) {
  std::vector<at::Tensor> outputs;
  auto bytes = read_file(path);
  if (!bytes) {
    problem = "no output file";
    return outputs;
  }
  size_t offset = 0;
  for (const auto& shape : shapes) {
    at::Tensor tensor = at::empty(shape.sizes, at::TensorOptions().dtype(shape.dtype));
    size_t size = size_t(tensor.nbytes());
    if (offset + size > bytes->size()) {
      problem = "output file is short";
      return {};
    }
    std::memcpy(tensor.data_ptr(), bytes->data() + offset, size);
    offset += size;
    outputs.push_back(tensor);
  }
  return outputs;
}

}  // namespace

std::expected<Json, std::string> verify_candidate(const Json& task, const Json& candidate, const VerifyOptions& options) {
  auto program_json = require_field(task, "program", "task");
  if (!program_json) return Error(program_json.error());
  auto program = parse_program(**program_json, "task.program");
  if (!program) return Error(program.error());
  auto interpreter = Interpreter::create(*program, "task.program");
  if (!interpreter) return Error(interpreter.error());
  auto shapes = interpreter->infer_shapes();
  if (!shapes) return Error(shapes.error());
  auto files = candidate_files(candidate);
  if (!files) return verdict(false, "static", files.error());

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

  // The runner reads run_dir (its request) and may write only run_dir/io,
  // which the sandbox hands to its unprivileged user.
  std::string run_dir = (std::filesystem::temp_directory_path() / "ca-verify-XXXXXX").string();
  if (mkdtemp(run_dir.data()) == nullptr || chmod(run_dir.c_str(), 0755) != 0) return Error("cannot create a run directory under /tmp");
  struct Cleanup {
    std::string dir;
    ~Cleanup() { std::filesystem::remove_all(dir); }
  } cleanup{run_dir};
  std::string io_dir = run_dir + "/io";
  std::error_code ec;
  if (!std::filesystem::create_directory(io_dir, ec)) return Error("cannot create " + io_dir);

  std::vector<uint64_t> seeds = trial_seeds(options.trials, options.seed);
  std::string runner = options.runner.empty() ? default_runner() : options.runner;
  std::string request_path = run_dir + "/request.json";
  auto written = write_file_atomic(request_path, runner_request(*program, *shapes, built->library, seeds, io_dir, options).dump());
  if (!written) return Error(written.error());
  chmod(request_path.c_str(), 0644);  // the runner reads it as the sandbox's unprivileged user

  SandboxSpec spec;
  spec.argv = {runner, request_path};
  spec.workdir = run_dir;
  spec.writable = {io_dir};
  spec.readable = {runner, built->library};
  spec.gpu = options.build.backend == Backend::cuda;
  spec.limits = options.limits;
  auto ran = run_sandboxed(spec);
  if (!ran) return Error(ran.error());

  std::string load_error;
  auto calls = read_results(io_dir + "/results.jsonl", seeds.size(), load_error);
  if (!calls) return Error(calls.error());
  std::string runner_says = last_lines(ran->err, 5);
  if (!load_error.empty()) {
    result.update(verdict(false, "load", load_error), false);
    result["checks"]["load"] = false;
    return result;
  }
  result["checks"]["load"] = true;

  at::Device device = options.build.backend == Backend::cuda ? at::Device(at::kCUDA) : at::Device(at::kCPU);
  Json trials = Json::array();
  for (size_t i = 0; i < seeds.size(); ++i) {
    const std::optional<CallReport>& call = (*calls)[i];
    std::string trial = "trial " + std::to_string(i + 1) + "/" + std::to_string(seeds.size());
    std::string failure_stage, failure;
    if (!call) {
      failure_stage = ran->timed_out ? "timeout" : "run";
      failure = ran->timed_out ? trial + " did not finish within " + std::to_string(int(options.limits.wall_s)) + " s"
                               : trial + " crashed: " + (ran->signal ? "killed by signal " + std::to_string(ran->signal)
                                                                     : "exit status " + std::to_string(ran->exit_code)) +
                                     (ran->limit_hit.empty() ? "" : " (" + ran->limit_hit + " limit)");
      if (!runner_says.empty()) failure += "; last output: " + runner_says;
    } else if (!call->cuda_error.empty()) {
      failure_stage = "run";
      failure = trial + ": CUDA error " + call->cuda_error;
    } else if (call->rc != 0) {
      failure_stage = "run";
      failure = trial + ": ca_forward returned " + std::to_string(call->rc);
    } else if (call->inputs_changed) {
      failure_stage = "run";
      failure = trial + ": the candidate modified its inputs; inputs must stay unchanged";
    }
    Json entry = {{"seed", seeds[i]}, {"signed_inputs", i % 2 == 1}};
    if (failure.empty()) {
      auto reference = interpreter->run(make_tensors(trial_program(*program, int(i)), seeds[i], device));
      if (!reference) return Error("reference failed on " + trial + ": " + reference.error());
      std::string problem;
      auto outputs = read_outputs(io_dir + "/out-" + std::to_string(i) + ".bin", *shapes, problem);
      if (!problem.empty()) {
        failure_stage = "run";
        failure = trial + ": " + problem;
      }
      double max_abs = 0, max_rel = 0, rel_l2 = 0;
      for (size_t k = 0; k < outputs.size() && failure.empty(); ++k) {
        Comparison c = compare_output(outputs[k], (*reference)[k], options.tolerance);
        max_abs = std::max(max_abs, c.max_abs);
        max_rel = std::max(max_rel, c.max_rel);
        rel_l2 = std::max(rel_l2, c.rel_l2);
        if (!c.ok) {
          failure_stage = "compare";
          failure = trial + (i % 2 == 1 ? " (signed inputs)" : "") + ", output " + std::to_string(k) + ": " + c.message;
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
      result["checks"]["run"] = failure_stage == "compare";
      result["checks"]["compare"] = false;
      return result;
    }
  }
  result["trials"] = trials;
  result["checks"]["run"] = true;
  result["checks"]["compare"] = true;
  return result;
}

std::string agent_report(const Json& verify) {
  std::string report;
  bool ok = verify.value("ok", false);
  std::string failed_stage = verify.value("stage", "");
  const Json& checks = verify["checks"];
  for (std::string step : {"static", "compile", "load", "run", "timeout", "compare"}) {
    if (!ok && step == failed_stage) {
      report += "[FAIL] " + step + ": " + verify.value("message", "") + "\n";
      break;
    }
    if (!checks.contains(step) || !checks[step].get<bool>()) continue;
    report += "[PASS] " + step;
    if (step == "compare") {
      report += ": " + std::to_string(verify["trials"].size()) + " trials within atol " + verify["tolerance"]["atol"].dump() +
                ", rtol " + verify["tolerance"]["rtol"].dump();
    }
    report += "\n";
  }
  return report;
}

}  // namespace ca
