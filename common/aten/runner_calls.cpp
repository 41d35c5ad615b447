#include "aten/runner_calls.h"

#include <sys/stat.h>

#include <climits>
#include <cmath>
#include <chrono>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <filesystem>
#include <sstream>

#include "aten/tensors.h"
#include "ir/tensor_init.h"
#include "util/atomic_file.h"
#include "util/remove_tree.h"

namespace ca {
namespace {

using Error = std::unexpected<std::string>;

std::string default_runner() {
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return (self.parent_path() / "ca-runner").string();
}

Json tensors_of(const Program& program) {
  Json json = to_json(program);
  Json tensors = json["inputs"];
  for (const auto& param : json["params"]) tensors.push_back(param);
  return tensors;
}

Json runner_request(const Program& program, const std::vector<TensorShape>& shapes, const std::string& library,
                    const std::vector<RunnerCall>& calls, const std::string& io_dir, const RunnerOptions& options) {
  Json outputs = Json::array();
  for (const auto& shape : shapes) outputs.push_back({{"dtype", dtype_name(*from_scalar_type(shape.dtype))}, {"shape", shape.sizes}});
  const Json signed_tensors = tensors_of(with_signed_inputs(program));
  Json call_list = Json::array();
  for (size_t i = 0; i < calls.size(); ++i) {
    Json call = {{"seed", calls[i].seed}, {"output_file", "out-" + std::to_string(i) + ".bin"}};
    if (calls[i].signed_inputs) call["tensors"] = signed_tensors;
    call_list.push_back(std::move(call));
  }
  return {{"library", library},         {"backend", backend_name(options.backend)}, {"device_index", 0},
          {"num_threads", options.num_threads}, {"tensors", tensors_of(program)},    {"outputs", outputs},
          {"calls", call_list},         {"output_dir", io_dir}};
}

// One report slot per call of the request; a call without a report crashed or hung the runner.
std::expected<std::vector<std::optional<CallReport>>, std::string> read_reports(const std::string& path, size_t calls,
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
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    problem = "no output file";
    return outputs;
  }
  // Straight into the tensors: a round's outputs can be gigabytes.
  for (const auto& shape : shapes) {
    at::Tensor tensor = at::empty(shape.sizes, at::TensorOptions().dtype(shape.dtype));
    auto size = std::streamsize(tensor.nbytes());
    if (!file.read(static_cast<char*>(tensor.data_ptr()), size) || file.gcount() != size) {
      problem = "output file is short";
      return {};
    }
    outputs.push_back(tensor);
  }
  return outputs;
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

// The runner runs in another directory, inside the sandbox: it gets weight files by absolute path.
std::expected<Program, std::string> with_absolute_files(const Program& program) {
  Program copy = program;
  for (auto* list : {&copy.inputs, &copy.params}) {
    for (auto& spec : *list) {
      if (spec.init.dist != Dist::file) continue;
      char resolved[PATH_MAX];
      if (realpath(spec.init.path.c_str(), resolved) == nullptr) return Error(spec.init.path + ": " + std::strerror(errno));
      spec.init.path = resolved;
    }
  }
  return copy;
}

}  // namespace

Program with_signed_inputs(const Program& program) {
  Program copy = program;
  for (auto& input : copy.inputs) {
    if (input.init.dist == Dist::rand) input.init = {Dist::uniform, -1, 1};
  }
  return copy;
}

std::expected<RunnerOutcome, std::string> run_in_runner(const Program& program, const std::vector<TensorShape>& shapes,
                                                        const std::string& library, const std::vector<RunnerCall>& calls,
                                                        const RunnerOptions& options) {
  // The runner reads run_dir (its request) and may write only run_dir/io, which the sandbox hands to its
  // unprivileged user.
  std::string run_dir = (std::filesystem::temp_directory_path() / "ca-run-XXXXXX").string();
  if (mkdtemp(run_dir.data()) == nullptr || chmod(run_dir.c_str(), 0755) != 0) return Error("cannot create a run directory under /tmp");
  struct Cleanup {
    std::string dir;
    ~Cleanup() { remove_tree(dir); }
  } cleanup{run_dir};
  std::string io_dir = run_dir + "/io";
  std::error_code ec;
  if (!std::filesystem::create_directory(io_dir, ec)) return Error("cannot create " + io_dir);

  std::string runner = options.runner.empty() ? default_runner() : options.runner;
  std::string request_path = run_dir + "/request.json";
  auto absolute = with_absolute_files(program);
  if (!absolute) return Error(absolute.error());
  auto written = write_file_atomic(request_path, runner_request(*absolute, shapes, library, calls, io_dir, options).dump());
  if (!written) return Error(written.error());
  chmod(request_path.c_str(), 0644);  // the runner reads it as the sandbox's unprivileged user

  SandboxSpec spec;
  spec.argv = {runner, request_path};
  spec.workdir = run_dir;
  spec.writable = {io_dir};
  spec.readable = {runner, library};
  for (const auto& file : param_files(*absolute)) spec.readable.push_back(file);
  spec.gpu = options.backend == Backend::cuda;
  spec.limits = options.limits;
  auto started = std::chrono::steady_clock::now();
  auto ran = run_sandboxed(spec);
  auto elapsed = std::chrono::steady_clock::now() - started;
  if (!ran) return Error(ran.error());

  RunnerOutcome outcome;
  outcome.sandbox = std::move(*ran);
  outcome.elapsed_us = double(std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count()) / 1000.0;
  auto reports = read_reports(io_dir + "/" + std::string(k_results_file), calls.size(), outcome.load_error);
  if (!reports) return Error(reports.error());
  double reported_us = 0;
  for (size_t i = 0; i < calls.size(); ++i) {
    RunnerCallResult result;
    result.report = (*reports)[i];
    if (result.report && result.report->ok()) {
      result.outputs = read_outputs(io_dir + "/out-" + std::to_string(i) + ".bin", shapes, result.output_problem);
      reported_us += result.report->wall_us;
    }
    outcome.calls.push_back(std::move(result));
  }
  // The runner's clocks run inside the candidate's process; ours does not. Times that sum past the whole
  // invocation were not measured.
  if (reported_us > outcome.elapsed_us) {
    outcome.untrusted = "the runner reported " + std::to_string(int64_t(reported_us)) + " us of calls in an invocation of " +
                        std::to_string(int64_t(outcome.elapsed_us)) + " us, so its reports were tampered with";
  }
  return outcome;
}

std::optional<CallFailure> call_failure(const RunnerOutcome& outcome, size_t index, const std::string& label,
                                        const RunnerOptions& options) {
  const RunnerCallResult& call = outcome.calls[index];
  const SandboxResult& ran = outcome.sandbox;
  if (!call.report) {
    if (ran.timed_out) return CallFailure{"timeout", label + " did not finish within " + std::to_string(int(options.limits.wall_s)) + " s"};
    // The CPU limit is a time limit too (the tools set both from --timeout). A single-threaded spin reaches it first
    // when the supervisor wakes late on a loaded machine, and then it is the same hang.
    if (ran.limit_hit == "cpu") {
      std::string limit = std::to_string(int(std::ceil(options.limits.cpu_s)));
      return CallFailure{"timeout", label + " did not finish within " + limit + " s of CPU time"};
    }
    std::string message = label + " crashed: " +
                          (ran.signal ? "killed by signal " + std::to_string(ran.signal) : "exit status " + std::to_string(ran.exit_code)) +
                          (ran.limit_hit.empty() ? "" : " (" + ran.limit_hit + " limit)");
    if (std::string says = last_lines(ran.err, 5); !says.empty()) message += "; last output: " + says;
    return CallFailure{"run", message};
  }
  if (!outcome.untrusted.empty()) return CallFailure{"run", label + ": " + outcome.untrusted};
  const CallReport& report = *call.report;
  if (!report.cuda_error.empty()) return CallFailure{"run", label + ": CUDA error " + report.cuda_error};
  if (report.rc != 0) return CallFailure{"run", label + ": ca_forward returned " + std::to_string(report.rc)};
  if (report.inputs_changed) return CallFailure{"run", label + ": the candidate modified its inputs; inputs must stay unchanged"};
  if (report.own_launches == 0) {
    return CallFailure{"launch", label + ": none of the candidate's own CUDA kernels launched; the outputs must come from "
                                         "its kernels (a decoy kernel, EXPLOITS A2)"};
  }
  if (!call.output_problem.empty()) return CallFailure{"run", label + ": " + call.output_problem};
  return std::nullopt;
}

}  // namespace ca
