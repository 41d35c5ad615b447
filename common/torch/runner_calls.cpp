#include "torch/runner_calls.h"

#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cmath>
#include <chrono>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <sstream>
#include <utility>

#include "torch/tensors.h"
#include "ir/tensor_init.h"
#include "runner/output_region.h"
#include "runner/run_candidate.h"
#include "runner/run_dir.h"
#include "util/atomic_file.h"

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

// The bytes of each output, in order.
std::vector<uint64_t> output_sizes(const std::vector<TensorShape>& shapes) {
  std::vector<uint64_t> sizes;
  for (const auto& shape : shapes) {
    int64_t numel = 1;
    for (int64_t size : shape.sizes) numel *= size;
    sizes.push_back(uint64_t(numel) * at::elementSize(shape.dtype));
  }
  return sizes;
}

Json runner_request(const Program& program, const std::vector<TensorShape>& shapes, const std::string& library,
                    const std::vector<RunnerCall>& calls, const OutputRegion& region, const OutputLayout& layout,
                    const std::string& io_dir, const RunnerOptions& options) {
  Json outputs = Json::array();
  for (const auto& shape : shapes) outputs.push_back({{"dtype", dtype_name(*from_scalar_type(shape.dtype))}, {"shape", shape.sizes}});
  const Json signed_tensors = tensors_of(with_signed_inputs(program));
  Json call_list = Json::array();
  for (size_t i = 0; i < calls.size(); ++i) {
    Json call = {{"seed", calls[i].seed}, {"output_offsets", layout.offsets[i]}};
    if (calls[i].signed_inputs) call["tensors"] = signed_tensors;
    call_list.push_back(std::move(call));
  }
  return {{"library", library},
          {"backend", backend_name(options.backend)},
          {"device_index", 0},
          {"num_threads", options.num_threads},
          {"tensors", tensors_of(program)},
          {"outputs", outputs},
          {"calls", call_list},
          {"output_region", {{"path", region.path()}, {"bytes", region.size()}}},
          {"output_dir", io_dir}};
}

// One report slot per call of the request; a call without a report crashed or hung the runner.
// Fills the outcome's load_error and runner_facts from the log.
std::expected<std::vector<std::optional<CallReport>>, std::string> read_reports(const std::string& path, size_t calls,
                                                                                RunnerOutcome& outcome) {
  std::vector<std::optional<CallReport>> reports(calls);
  auto text = read_file(path);
  if (!text) return reports;  // the runner died before writing anything
  // The runner writes one loaded line, then one line per call in order; the candidate could have written there too
  // (the runner checks before each line, but not after a crash), so anything else is not the runner's report.
  auto untrusted = [&](const std::string& why) {
    outcome.untrusted = "results.jsonl is not as the runner writes it (" + why + "), so its reports cannot be believed";
    return std::vector<std::optional<CallReport>>(calls);
  };
  auto log = parse_results(*text);
  if (!log) return untrusted(log.error());
  outcome.load_error = log->load_error;
  outcome.runner_facts = log->facts;
  for (size_t i = 0; i < log->calls.size(); ++i) {
    const CallReport& report = log->calls[i];
    if (report.call != i || i >= calls) {
      return untrusted("line " + std::to_string(i + 1) + " of the calls reports call " + std::to_string(report.call) + " of " +
                       std::to_string(calls));
    }
    reports[i] = report;
  }
  return reports;
}

// A call's outputs as views of the region (no copy), each keeping the region mapped. The runner decided nothing
// here: the offsets are the layout's, and a range the file no longer backs (truncated, or a page punched out) is
// refused before anything reads it.
std::vector<at::Tensor> output_views(const std::shared_ptr<OutputRegion>& region, const std::vector<uint64_t>& offsets,
                                     const std::vector<TensorShape>& shapes, const CallReport& report, std::string& problem) {
  const std::vector<uint64_t> sizes = output_sizes(shapes);
  uint64_t expected = 0;
  for (uint64_t size : sizes) expected += size;
  if (report.output_bytes < 0) {
    problem = "no output written";
    return {};
  }
  if (uint64_t(report.output_bytes) < expected) {
    problem = "output is short: the runner reported " + std::to_string(report.output_bytes) + " of " + std::to_string(expected) +
              " bytes written";
    return {};
  }
  if (uint64_t(report.output_bytes) > expected) {
    problem = "the runner reported " + std::to_string(report.output_bytes) + " bytes of output written, not " + std::to_string(expected);
    return {};
  }
  std::vector<at::Tensor> outputs;
  for (size_t k = 0; k < shapes.size(); ++k) {
    const auto options = at::TensorOptions().dtype(shapes[k].dtype);
    if (sizes[k] == 0) {
      outputs.push_back(at::empty(shapes[k].sizes, options));
      continue;
    }
    if (!region->holds(offsets[k], sizes[k])) {
      problem = "output " + std::to_string(k) + " is gone from the output region (its file was cut short or punched)";
      return {};
    }
    outputs.push_back(at::from_blob(region->data() + offsets[k], shapes[k].sizes, [region](void*) {}, options));
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

namespace {

// What every runner invocation shares: the run directory, the output region and its layout, the program with
// absolute file paths, and the sandbox (argv still to be set) that may read the runner, the library and the param
// files.
struct RunnerSetup {
  std::optional<RunDir> run_dir;  // the runner reads its requests here and may write only run_dir->io()
  Backend backend = Backend::cpu;
  std::vector<uint64_t> output_sizes;    // of each output, in order
  std::shared_ptr<OutputRegion> region;  // null until make_room; also held by every output view handed out
  OutputLayout layout;                   // the region's: room for layout.offsets.size() calls
  std::string pin_error;                 // cuda: why the region is not page-locked on this side; "" when it is
  Program program;
  std::string runner;
  SandboxSpec spec;
};

// `largest`: the most calls one request may have. The run directory's place and the runner's address-space limit
// allow for a region that big; make_room makes one as big as the calls at hand need.
std::expected<RunnerSetup, std::string> set_up(const Program& program, const std::vector<TensorShape>& shapes, const std::string& library,
                                               const RunnerOptions& options, size_t largest) {
  RunnerSetup setup;
  setup.backend = options.backend;
  setup.output_sizes = output_sizes(shapes);
  const uint64_t largest_bytes = layout_outputs(setup.output_sizes, largest).bytes;
  // RAM-backed where there is room, so neither side's pages are ever written back to a disk.
  auto run_dir = RunDir::create(run_files_dir(largest_bytes));
  if (!run_dir) return Error(run_dir.error());
  setup.run_dir.emplace(std::move(*run_dir));
  auto absolute = with_absolute_files(program);
  if (!absolute) return Error(absolute.error());
  setup.program = std::move(*absolute);
  setup.runner = options.runner.empty() ? default_runner() : options.runner;
  setup.spec.workdir = setup.run_dir->path();
  setup.spec.writable = {setup.run_dir->io()};
  setup.spec.readable = {setup.runner, library};
  for (const auto& file : param_files(setup.program)) setup.spec.readable.push_back(file);
  setup.spec.gpu = options.backend == Backend::cuda;
  setup.spec.limits = options.limits;
  // The runner maps the whole region: the harness's memory, not the candidate's, so the address-space limit grows.
  setup.spec.limits.memory_bytes += int64_t(largest_bytes);
  return setup;
}

// Gives the region room for `calls` calls' outputs: a new one (page-locked on cuda, so that moving the outputs to
// the GPU for the comparison is one DMA) when there is none or it is smaller. The old one's file goes; the runner
// keeps its mapping until a request names the new file, and views of it keep theirs.
std::expected<void, std::string> make_room(RunnerSetup& setup, size_t calls) {
  if (setup.region && setup.layout.offsets.size() >= calls) return {};
  OutputLayout layout = layout_outputs(setup.output_sizes, calls);
  auto region = OutputRegion::create(setup.run_dir->io(), layout.bytes);
  if (!region) return Error(region.error());
  // The sandbox gives its user the writable tree when it starts; a region made later must be given too.
  if (::geteuid() == 0 && ::chown(region->path().c_str(), k_sandbox_uid, k_sandbox_uid) != 0) {
    return Error(region->path() + ": cannot hand the output region to the sandbox's user: " + std::strerror(errno));
  }
  if (setup.region) ::unlink(setup.region->path().c_str());
  setup.region = std::make_shared<OutputRegion>(std::move(*region));
  setup.layout = std::move(layout);
  if (setup.backend == Backend::cuda) {
    auto pinned = setup.region->pin();
    setup.pin_error = pinned ? "" : pinned.error();
  }
  return {};
}

// Writes the request for `calls` (results to io_dir) to `path`, readable by the sandbox's unprivileged user.
std::expected<void, std::string> write_request(const std::string& path, const RunnerSetup& setup, const std::vector<TensorShape>& shapes,
                                               const std::string& library, const std::vector<RunnerCall>& calls,
                                               const std::string& io_dir, const RunnerOptions& options) {
  Json request = runner_request(setup.program, shapes, library, calls, *setup.region, setup.layout, io_dir, options);
  auto written = write_file_atomic(path, request.dump());
  if (!written) return Error(written.error());
  chmod(path.c_str(), 0644);
  return {};
}

double microseconds(std::chrono::steady_clock::duration elapsed) {
  return double(std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count()) / 1000.0;
}

// Fills the outcome's calls from what the runner left in io_dir and the output region, and marks the reports
// untrusted when they sum past outcome.elapsed_us. Only once the runner has exited or is stopped: nothing in the
// sandbox may change the region while this checks and views it.
std::expected<void, std::string> collect(RunnerOutcome& outcome, const std::string& io_dir, const RunnerSetup& setup,
                                         const std::vector<TensorShape>& shapes, size_t calls) {
  auto reports = read_reports(io_dir + "/" + std::string(k_results_file), calls, outcome);
  if (!reports) return Error(reports.error());
  outcome.pin_error = setup.pin_error;
  double reported_us = 0;
  for (size_t i = 0; i < calls; ++i) {
    RunnerCallResult result;
    result.report = (*reports)[i];
    if (result.report && result.report->ok()) {
      result.outputs = output_views(setup.region, setup.layout.offsets[i], shapes, *result.report, result.output_problem);
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
  return {};
}

// How long a session's runner gets to exit after its stdin closes.
constexpr double k_session_exit_s = 10;

}  // namespace

std::expected<RunnerOutcome, std::string> run_in_runner(const Program& program, const std::vector<TensorShape>& shapes,
                                                        const std::string& library, const std::vector<RunnerCall>& calls,
                                                        const RunnerOptions& options) {
  auto setup = set_up(program, shapes, library, options, calls.size());
  if (!setup) return Error(setup.error());
  if (auto room = make_room(*setup, calls.size()); !room) return Error(room.error());
  std::string request_path = setup->run_dir->path() + "/request.json";
  if (auto written = write_request(request_path, *setup, shapes, library, calls, setup->run_dir->io(), options); !written) {
    return Error(written.error());
  }
  setup->spec.argv = {setup->runner, request_path};
  auto started = std::chrono::steady_clock::now();
  auto ran = run_sandboxed(setup->spec);
  auto elapsed = std::chrono::steady_clock::now() - started;
  if (!ran) return Error(ran.error());

  RunnerOutcome outcome;
  outcome.sandbox = std::move(*ran);
  outcome.elapsed_us = microseconds(elapsed);
  if (auto collected = collect(outcome, setup->run_dir->io(), *setup, shapes, calls.size()); !collected) return Error(collected.error());
  return outcome;
}

struct RunnerSession::State {
  RunnerSetup setup;
  std::vector<TensorShape> shapes;
  std::string library;
  RunnerOptions options;                  // limits.cpu_s: the whole session's
  std::optional<SandboxSession> sandbox;  // from the first run until the runner ends
  std::optional<SandboxResult> ended;     // how the runner ended, once it did
  int rounds = 0;                         // run() calls so far
  size_t largest_round = 0;               // the most calls a round may have
};

RunnerSession::RunnerSession(std::unique_ptr<State> state) : m_state(std::move(state)) {}
RunnerSession::RunnerSession(RunnerSession&&) noexcept = default;
RunnerSession::~RunnerSession() {
  if (m_state) finish();
}

std::expected<RunnerSession, std::string> RunnerSession::open(const Program& program, const std::vector<TensorShape>& shapes,
                                                              const std::string& library, const RunnerOptions& options,
                                                              int rounds, size_t largest_round) {
  RunnerOptions session_options = options;
  session_options.limits.cpu_s = options.limits.cpu_s * std::max(1, rounds);
  auto setup = set_up(program, shapes, library, session_options, largest_round);
  if (!setup) return Error(setup.error());
  setup->spec.argv = {setup->runner, "--serve"};
  auto state = std::unique_ptr<State>(new State{.setup = std::move(*setup),
                                                .shapes = shapes,
                                                .library = library,
                                                .options = session_options,
                                                .sandbox = std::nullopt,
                                                .ended = std::nullopt,
                                                .rounds = 0,
                                                .largest_round = largest_round});
  return RunnerSession(std::move(state));
}

const RunnerOptions& RunnerSession::options() const { return m_state->options; }

std::expected<RunnerOutcome, std::string> RunnerSession::run(const std::vector<RunnerCall>& calls) {
  State& s = *m_state;
  if (calls.size() > s.largest_round) {
    return Error("a round of " + std::to_string(calls.size()) + " calls does not fit in the session's output region, opened for " +
                 std::to_string(s.largest_round));
  }
  // The runner is about to write over the region that an earlier round's outputs are views of.
  if (s.setup.region.use_count() > 1) return Error("an earlier round's outputs are still in use; drop them before the next round");
  // Grown as rounds need (ca-profile: its first round is small, later ones as many calls as it measures it needs).
  if (auto room = make_room(s.setup, calls.size()); !room) return Error(room.error());
  const int round = s.rounds++;
  // Each round has its own results directory, which the runner makes, so no report of an earlier round is read again;
  // the outputs of every round go to the same region.
  const std::string io_dir = s.setup.run_dir->io() + "/round-" + std::to_string(round);
  const std::string request_path = s.setup.run_dir->path() + "/request-" + std::to_string(round) + ".json";
  RunnerOutcome outcome;
  if (s.ended) {  // a runner that died in an earlier round runs nothing more: every call is unreported
    outcome.sandbox = *s.ended;
    outcome.calls.resize(calls.size());
    return outcome;
  }
  if (auto written = write_request(request_path, s.setup, s.shapes, s.library, calls, io_dir, s.options); !written) {
    return Error(written.error());
  }
  // The first round's clock includes the sandbox's and the device's start-up, as one invocation's does.
  auto started = std::chrono::steady_clock::now();
  if (!s.sandbox) {
    auto sandbox = SandboxSession::start(s.setup.spec);
    if (!sandbox) return Error(sandbox.error());
    s.sandbox = std::move(*sandbox);
  }
  s.sandbox->resume();
  s.sandbox->send_line(request_path);
  auto line = s.sandbox->wait_line(s.options.limits.wall_s);
  auto elapsed = std::chrono::steady_clock::now() - started;
  if (!line) {
    s.sandbox.reset();
    return Error(line.error());
  }
  std::string answer = line->value_or("");
  if (line->has_value() && answer == "done") {
    outcome.sandbox.exit_code = 0;  // still running; it has reported this round
    // Stopped until the next round, so that nothing the candidate left running (a thread it made without
    // pthread_create, say) takes the cores, or queues GPU work, while the baselines are timed.
    s.sandbox->pause();
  } else {
    // It ended (crashed, exited, or was killed at the wall limit), or answered something else, which only a
    // candidate writing to the runner's own stdout can make it do: either way the session is over.
    auto result = s.sandbox->finish(k_session_exit_s);
    s.sandbox.reset();
    if (!result) return Error(result.error());
    s.ended = *result;
    outcome.sandbox = std::move(*result);
  }
  outcome.elapsed_us = microseconds(elapsed);
  if (auto collected = collect(outcome, io_dir, s.setup, s.shapes, calls.size()); !collected) return Error(collected.error());
  if (line->has_value() && answer != "done" && outcome.untrusted.empty()) {
    outcome.untrusted = "the runner answered \"" + answer.substr(0, 80) + "\" instead of \"done\", so its reports cannot be believed";
  }
  return outcome;
}

std::optional<SandboxResult> RunnerSession::finish() {
  State& s = *m_state;
  if (s.sandbox) {
    auto result = s.sandbox->finish(k_session_exit_s);
    s.sandbox.reset();
    if (result) s.ended = *result;
  }
  return s.ended;
}

std::optional<CallFailure> call_failure(const RunnerOutcome& outcome, size_t index, const std::string& label,
                                        const RunnerOptions& options) {
  const RunnerCallResult& call = outcome.calls[index];
  const SandboxResult& ran = outcome.sandbox;
  if (!outcome.untrusted.empty()) return CallFailure{"run", label + ": " + outcome.untrusted};
  if (!call.report) {
    if (ran.timed_out) return CallFailure{"timeout", label + " did not finish within " + std::to_string(int(options.limits.wall_s)) + " s"};
    // The CPU limit is a time limit too (the tools set both from --timeout). A single-threaded spin reaches it first
    // when the supervisor wakes late on a loaded machine, and then it is the same hang.
    if (ran.limit_hit == "cpu") {
      std::string limit = std::to_string(int(std::ceil(options.limits.cpu_s)));
      return CallFailure{"timeout", label + " did not finish within " + limit + " s of CPU time"};
    }
    if (ran.exit_code == to_int(k_exit_tampered)) {
      return CallFailure{"run", label + ": the runner stopped: its reports were tampered with; " + last_lines(ran.err, 5)};
    }
    std::string message = label + " crashed: " +
                          (ran.signal ? "killed by signal " + std::to_string(ran.signal) : "exit status " + std::to_string(ran.exit_code)) +
                          (ran.limit_hit.empty() ? "" : " (" + ran.limit_hit + " limit)");
    if (std::string says = last_lines(ran.err, 5); !says.empty()) message += "; last output: " + says;
    return CallFailure{"run", message};
  }
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
