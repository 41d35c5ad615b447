#include "torch/runner_calls.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <sstream>
#include <utility>

#include "ir/tensor_init.h"
#include "runner/output_region.h"
#include "runner/run_candidate.h"
#include "runner/run_dir.h"
#include "runner/seccomp.h"
#include "timing/clock.h"
#include "torch/tensors.h"
#include "util/atomic_file.h"
#include "util/executable_dir.h"

namespace ca {
namespace fs = std::filesystem;
namespace {

using Error = std::unexpected<std::string>;

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

// No seeds: the runner learns each call's seed when the call starts (RunnerSession::run), and on cpu not even that,
// since the inputs are written into `inputs` (when given) at that moment.
Json runner_request(const Program& program, const std::vector<TensorShape>& shapes, const std::string& library,
                    const std::vector<RunnerCall>& calls, const OutputRegion& region, const OutputLayout& layout,
                    const OutputRegion* inputs, const OutputLayout& input_layout, const std::string& io_dir,
                    const RunnerOptions& options) {
  Json outputs = Json::array();
  for (const auto& shape : shapes)
    outputs.push_back({{"dtype", dtype_name(*from_scalar_type(shape.dtype))}, {"shape", shape.sizes}});
  const Json signed_tensors = tensors_of(with_signed_inputs(program));
  Json call_list = Json::array();
  for (size_t i = 0; i < calls.size(); ++i) {
    Json call = {{"output_offsets", layout.offsets[i]}};
    if (calls[i].signed_inputs) call["tensors"] = signed_tensors;
    call_list.push_back(std::move(call));
  }
  Json request = {{"library", library},
                  {"backend", backend_name(options.backend)},
                  {"device_index", 0},
                  {"num_threads", options.num_threads},
                  {"tensors", tensors_of(program)},
                  {"outputs", outputs},
                  {"calls", call_list},
                  {"output_region", {{"path", region.path()}, {"bytes", region.size()}}},
                  {"output_dir", io_dir}};
  if (inputs != nullptr) {
    request["input_region"] = {{"path", inputs->path()}, {"bytes", inputs->size()}};
    request["input_offsets"] = input_layout.offsets.at(0);
  }
  return request;
}

// The runner's events in results.jsonl (loaded or load_failed); the calls' reports come over the pipe. The candidate
// can write there too, and a call line there is not the runner's.
void read_events(const std::string& path, RunnerOutcome& outcome) {
  auto text = read_file(path);
  if (!text) return;  // the runner died before writing anything
  auto log = parse_results(*text);
  if (!log || !log->calls.empty()) {
    outcome.untrusted = "results.jsonl is not as the runner writes it (" +
                        (log ? std::string("a call line, which the runner sends over its pipe") : log.error()) +
                        "), so its reports cannot be believed";
    return;
  }
  outcome.load_error = log->load_error;
  outcome.runner_facts = log->facts;
}

// A call's outputs as views of the region (no copy), each keeping the region mapped. The runner decided nothing
// here: the offsets are the layout's, and a range the file no longer backs (truncated, or a page punched out) is
// refused before anything reads it.
std::vector<at::Tensor> output_views(const std::shared_ptr<OutputRegion>& region, const std::vector<uint64_t>& offsets,
                                     const std::vector<TensorShape>& shapes, const CallReport& report,
                                     std::string& problem) {
  const std::vector<uint64_t> sizes = output_sizes(shapes);
  uint64_t expected = 0;
  for (uint64_t size : sizes) expected += size;
  if (report.output_bytes < 0) {
    problem = "no output written";
    return {};
  }
  if (uint64_t(report.output_bytes) < expected) {
    problem = "output is short: the runner reported " + std::to_string(report.output_bytes) + " of " +
              std::to_string(expected) + " bytes written";
    return {};
  }
  if (uint64_t(report.output_bytes) > expected) {
    problem = "the runner reported " + std::to_string(report.output_bytes) + " bytes of output written, not " +
              std::to_string(expected);
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
    outputs.push_back(at::from_blob(
        region->data() + offsets[k], shapes[k].sizes, [region](void*) {}, options));
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
  for (size_t i = lines.size() > count ? lines.size() - count : 0; i < lines.size(); ++i)
    out += (out.empty() ? "" : "; ") + lines[i];
  return out;
}

// The runner runs in another directory, inside the sandbox: it gets weight files by absolute path.
std::expected<Program, std::string> with_absolute_files(const Program& program) {
  Program copy = program;
  for (auto* list : {&copy.inputs, &copy.params}) {
    for (auto& spec : *list) {
      if (spec.init.dist != Dist::file) continue;
      char resolved[PATH_MAX];
      if (realpath(spec.init.path.c_str(), resolved) == nullptr)
        return Error(spec.init.path + ": " + std::strerror(errno));
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

// What every runner invocation shares: the run directory, the output region and its layout, the cpu input slot, the
// program with absolute file paths, and the sandbox (argv still to be set) that may read the runner, the library
// and the param files.
struct RunnerSetup {
  std::optional<RunDir> run_dir;  // the runner reads its requests here and may write only run_dir->io()
  Backend backend = Backend::cpu;
  std::vector<uint64_t> output_sizes;  // of each output, in order
  std::vector<DType> output_dtypes;
  std::shared_ptr<OutputRegion> region;  // null until make_room; also held by every output view handed out
  OutputLayout layout;                   // the region's: room for layout.offsets.size() calls
  std::string pin_error;                 // cuda: why the region is not page-locked on this side; "" when it is
  /// cpu: the one call's inputs, written here while the runner is stopped, right before the call (docs/EXPLOITS.md,
  /// B14).
  std::optional<OutputRegion> inputs;
  OutputLayout input_layout;                        // one call's tensors
  std::vector<TensorSpec> tensors, signed_tensors;  // inputs then params, as drawn; signed: with_signed_inputs
  std::unique_ptr<CallClock> clock;                 // cpu, timed: its prepare() flushes the cache before each call
  Program program;
  std::string runner;
  SandboxSpec spec;
};

std::vector<TensorSpec> tensor_specs(const Program& program) {
  std::vector<TensorSpec> specs = program.inputs;
  specs.insert(specs.end(), program.params.begin(), program.params.end());
  return specs;
}

// The sandbox gives its user the writable tree when it starts; a file made later must be given too.
std::expected<void, std::string> hand_over(const std::string& path) {
  if (::geteuid() == 0 && ::chown(path.c_str(), k_sandbox_uid, k_sandbox_uid) != 0) {
    return Error(path + ": cannot hand it to the sandbox's user: " + std::strerror(errno));
  }
  return {};
}

std::expected<void, std::string> hand_over(const OutputRegion& region) {
  return hand_over(region.path());
}

// A round's results directory and its empty results.jsonl, made here: on cpu the runner may make no file once the
// candidate is loaded (runner/seccomp.h, forbid_new_storage), and every round after the first comes after that.
std::expected<void, std::string> make_results_file(const std::string& io_dir) {
  std::error_code ec;
  fs::create_directories(io_dir, ec);
  if (ec) return Error(io_dir + ": cannot create: " + ec.message());
  const std::string path = io_dir + "/" + std::string(k_results_file);
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) return Error(path + ": cannot create: " + std::strerror(errno));
  ::close(fd);
  for (const std::string& made : {io_dir, path}) {
    if (auto given = hand_over(made); !given) return Error(given.error());
  }
  return {};
}

// `largest`: the most calls one request may have. The run directory's place and the runner's address-space limit
// allow for a region that big; make_room makes one as big as the calls at hand need.
std::expected<RunnerSetup, std::string> set_up(const Program& program, const std::vector<TensorShape>& shapes,
                                               const std::string& library, const RunnerOptions& options,
                                               size_t largest) {
  RunnerSetup setup;
  setup.backend = options.backend;
  setup.output_sizes = output_sizes(shapes);
  for (const auto& shape : shapes) setup.output_dtypes.push_back(*from_scalar_type(shape.dtype));
  const uint64_t largest_bytes = layout_outputs(setup.output_sizes, largest).bytes;
  auto absolute = with_absolute_files(program);
  if (!absolute) return Error(absolute.error());
  setup.program = std::move(*absolute);
  setup.tensors = tensor_specs(setup.program);
  setup.signed_tensors = tensor_specs(with_signed_inputs(setup.program));
  std::vector<uint64_t> input_sizes;
  for (const auto& spec : setup.tensors) input_sizes.push_back(uint64_t(spec.numel()) * dtype_size(spec.dtype));
  setup.input_layout = layout_outputs(input_sizes, 1);
  const uint64_t input_bytes = options.backend == Backend::cpu ? setup.input_layout.bytes : 0;
  // RAM-backed where there is room, so neither side's pages are ever written back to a disk.
  auto run_dir = RunDir::create(run_files_dir(largest_bytes + input_bytes));
  if (!run_dir) return Error(run_dir.error());
  setup.run_dir.emplace(std::move(*run_dir));
  if (options.backend == Backend::cpu) {
    auto inputs = OutputRegion::create(setup.run_dir->io(), input_bytes, "inputs");
    if (!inputs) return Error(inputs.error());
    if (auto given = hand_over(*inputs); !given) return Error(given.error());
    setup.inputs.emplace(std::move(*inputs));
    if (options.timed) setup.clock = make_cpu_clock();
  }
  setup.runner = options.runner.empty() ? executable_dir() + "/ca-runner" : options.runner;
  setup.spec.workdir = setup.run_dir->path();
  setup.spec.writable = {setup.run_dir->io()};
  setup.spec.readable = {setup.runner, library};
  for (const auto& file : param_files(setup.program)) setup.spec.readable.push_back(file);
  setup.spec.gpu = options.backend == Backend::cuda;
  // Its share of the cores; the runner's seccomp filter keeps it from widening them (docs/EXPLOITS.md).
  setup.spec.cpus = options.num_threads;
  setup.spec.limits = options.limits;
  // The runner maps the whole region and the input slot: the harness's memory, not the candidate's.
  setup.spec.limits.memory_bytes += int64_t(largest_bytes + input_bytes);
  // The runner writes only results.jsonl (the regions are made here and written through their mappings), so a write
  // past the end of any file it may open stops here: with no file made or grown otherwise (forbid_new_storage), its
  // disk share is the regions plus this for each of its three files.
  setup.spec.limits.file_bytes = std::min(setup.spec.limits.file_bytes, k_runner_file_bytes);
  // cuda has no storage filter yet (its driver may make files): the parent's quota on io/ instead, room for the
  // largest region, the input slot and the results files, checked while the runner runs (sandbox.h, disk_bytes).
  if (options.backend == Backend::cuda)
    setup.spec.limits.disk_bytes = int64_t(largest_bytes + input_bytes) + k_runner_disk_slack_bytes;
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
  if (auto given = hand_over(*region); !given) return Error(given.error());
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
std::expected<void, std::string> write_request(const std::string& path, const RunnerSetup& setup,
                                               const std::vector<TensorShape>& shapes, const std::string& library,
                                               const std::vector<RunnerCall>& calls, const std::string& io_dir,
                                               const RunnerOptions& options) {
  const OutputRegion* inputs = setup.inputs ? &*setup.inputs : nullptr;
  Json request = runner_request(setup.program, shapes, library, calls, *setup.region, setup.layout, inputs,
                                setup.input_layout, io_dir, options);
  auto written = write_file_atomic(path, request.dump());
  if (!written) return Error(written.error());
  chmod(path.c_str(), 0644);
  return {};
}

double microseconds(std::chrono::steady_clock::duration elapsed) {
  return double(std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count()) / 1000.0;
}

// The bytes of the region a call's outputs occupy, hashed together; taken when the call's report arrives (the runner
// stopped) and again before anyone reads them, so that outputs written after their call returned are seen.
uint64_t hash_outputs(const OutputRegion& region, const std::vector<uint64_t>& offsets,
                      const std::vector<uint64_t>& sizes) {
  uint64_t hash = 0;
  for (size_t k = 0; k < sizes.size(); ++k) {
    if (sizes[k] == 0 || !region.holds(offsets[k], sizes[k])) continue;  // output_views refuses a lost slice
    hash = hash * 0x100000001B3ull ^ hash_bytes({region.data() + offsets[k], sizes[k]});
  }
  return hash;
}

// cpu: writes call `call`'s inputs into the slot (the runner is stopped) and poisons its output slices; returns the
// inputs' hashes. The inputs are the trusted side's draws, the same bytes the reference is made from.
std::expected<std::vector<uint64_t>, std::string> place_inputs(RunnerSetup& setup, const RunnerCall& call,
                                                               size_t index) {
  const std::vector<TensorSpec>& specs = call.signed_inputs ? setup.signed_tensors : setup.tensors;
  std::vector<uint64_t> hashes;
  for (size_t k = 0; k < specs.size(); ++k) {
    std::span<uint8_t> slot(setup.inputs->data() + setup.input_layout.offsets[0][k],
                            size_t(specs[k].numel()) * dtype_size(specs[k].dtype));
    if (auto drawn = draw_tensor(specs[k], call.seed, k, slot); !drawn) return Error(drawn.error());
    hashes.push_back(hash_bytes(slot));
  }
  // Poison, so that an element the candidate never wrote shows (docs/EXPLOITS.md, B2); its writes go straight here.
  const auto& offsets = setup.layout.offsets[index];
  for (size_t k = 0; k < setup.output_sizes.size(); ++k) {
    fill_poison(setup.output_dtypes[k], {setup.region->data() + offsets[k], setup.output_sizes[k]});
  }
  return hashes;
}

// Fills the outcome's calls from the reports and the output region, and marks the reports untrusted when they sum
// past outcome.elapsed_us. Only once the runner has exited or is stopped: nothing in the sandbox may change the
// region while this checks and views it.
std::expected<void, std::string> collect(RunnerOutcome& outcome, const std::string& io_dir, const RunnerSetup& setup,
                                         const std::vector<TensorShape>& shapes,
                                         std::vector<std::optional<CallReport>> reports,
                                         const std::vector<uint64_t>& output_hashes) {
  read_events(io_dir + "/" + std::string(k_results_file), outcome);
  outcome.pin_error = setup.pin_error;
  double reported_us = 0;
  for (size_t i = 0; i < reports.size(); ++i) {
    RunnerCallResult result;
    result.report = std::move(reports[i]);
    if (result.report && result.report->ok()) {
      if (hash_outputs(*setup.region, setup.layout.offsets[i], setup.output_sizes) != output_hashes[i]) {
        result.output_problem =
            "its outputs changed after the call returned (written by a later call or between calls)";
      } else {
        result.outputs =
            output_views(setup.region, setup.layout.offsets[i], shapes, *result.report, result.output_problem);
      }
      reported_us += result.report->wall_us;
    }
    outcome.calls.push_back(std::move(result));
  }
  if (reported_us > outcome.elapsed_us) {
    outcome.untrusted = "the runner reported " + std::to_string(int64_t(reported_us)) +
                        " us of calls in an invocation of " + std::to_string(int64_t(outcome.elapsed_us)) +
                        " us, so its reports were tampered with";
  }
  return {};
}

// How long a session's runner gets to exit after its stdin closes.
constexpr double k_session_exit_s = 10;
// Round trips of "ping" timed before the library loads; the fastest is the protocol's share of every cpu call's time.
constexpr int k_pings = 16;

}  // namespace

std::expected<RunnerOutcome, std::string> run_in_runner(const Program& program, const std::vector<TensorShape>& shapes,
                                                        const std::string& library,
                                                        const std::vector<RunnerCall>& calls,
                                                        const RunnerOptions& options) {
  auto session = RunnerSession::open(program, shapes, library, options, 1, calls.size());
  if (!session) return Error(session.error());
  auto outcome = session->run(calls);
  if (!outcome) return Error(outcome.error());
  // The runner's exit, with its stderr, as a one-shot invocation reports it; a runner that ended in the round has it.
  if (auto ended = session->finish(); ended && outcome->sandbox.exit_code == 0) outcome->sandbox = *ended;
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
  double overhead_us = 0;                 // the fastest ping's resume, round trip and stop, before the library loaded
};

RunnerSession::RunnerSession(std::unique_ptr<State> state) : m_state(std::move(state)) {}
RunnerSession::RunnerSession(RunnerSession&&) noexcept = default;
RunnerSession::~RunnerSession() {
  if (m_state) finish();
}

std::expected<RunnerSession, std::string> RunnerSession::open(const Program& program,
                                                              const std::vector<TensorShape>& shapes,
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
                                                .largest_round = largest_round,
                                                .overhead_us = 0});
  return RunnerSession(std::move(state));
}

const RunnerOptions& RunnerSession::options() const {
  return m_state->options;
}

namespace {

double seconds_until(std::chrono::steady_clock::time_point deadline) {
  return std::max(0.0, std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count());
}

}  // namespace

std::expected<RunnerOutcome, std::string> RunnerSession::run(const std::vector<RunnerCall>& calls) {
  State& s = *m_state;
  if (calls.size() > s.largest_round) {
    return Error("a round of " + std::to_string(calls.size()) +
                 " calls does not fit in the session's output region, opened for " + std::to_string(s.largest_round));
  }
  // The runner is about to write over the region that an earlier round's outputs are views of.
  if (s.setup.region.use_count() > 1)
    return Error("an earlier round's outputs are still in use; drop them before the next round");
  // Grown as rounds need (ca-profile: its first round is small, later ones as many calls as it measures it needs).
  if (auto room = make_room(s.setup, calls.size()); !room) return Error(room.error());
  const int round = s.rounds++;
  // Each round has its own results directory, which the runner makes, so no event of an earlier round is read again;
  // the outputs of every round go to the same region.
  const std::string io_dir = s.setup.run_dir->io() + "/round-" + std::to_string(round);
  const std::string request_path = s.setup.run_dir->path() + "/request-" + std::to_string(round) + ".json";
  RunnerOutcome outcome;
  if (s.ended) {  // a runner that died in an earlier round runs nothing more: every call is unreported
    outcome.sandbox = *s.ended;
    outcome.calls.resize(calls.size());
    return outcome;
  }
  if (auto made = make_results_file(io_dir); !made) return Error(made.error());
  if (auto written = write_request(request_path, s.setup, s.shapes, s.library, calls, io_dir, s.options); !written) {
    return Error(written.error());
  }
  using SteadyClock = std::chrono::steady_clock;
  // The round's wall limit; the first round's includes the sandbox's and the device's start-up.
  const auto started = SteadyClock::now();
  const auto deadline = started + std::chrono::duration_cast<SteadyClock::duration>(
                                      std::chrono::duration<double>(s.options.limits.wall_s));
  std::string protocol_error;  // the runner said something a runner does not say
  // One line from the runner within the round's limit; nullopt when it ended (crashed, exited, killed at the limit).
  auto answer = [&]() -> std::expected<std::optional<std::string>, std::string> {
    auto line = s.sandbox->wait_line(seconds_until(deadline));
    if (!line) s.sandbox.reset();
    return line;
  };
  // The runner's "<mark> <index>" line, then its stop (run_candidate.h, serve_requests): true once it is stopped
  // there, false when it ended or said anything else (protocol_error says what).
  auto held = [&](const char* mark, size_t index) -> std::expected<bool, std::string> {
    auto line = answer();
    if (!line) return std::unexpected(line.error());
    if (!*line) return false;
    if (**line != std::string(mark) + " " + std::to_string(index)) {
      protocol_error =
          "sent \"" + (*line)->substr(0, 80) + "\" where \"" + mark + " " + std::to_string(index) + "\" belongs";
      return false;
    }
    return s.sandbox->await_stop();
  };
  if (!s.sandbox) {
    auto sandbox = SandboxSession::start(s.setup.spec);
    if (!sandbox) return Error(sandbox.error());
    s.sandbox = std::move(*sandbox);
    // What every cpu call's time holds besides the call: the runner's CPU time from a continue to its next stop, with
    // nothing between, measured as a call's is but before any of the candidate's code is in the runner (the least of
    // k_pings).
    s.overhead_us = 0;
    for (int ping = 0; ping < k_pings && protocol_error.empty(); ++ping) {
      s.sandbox->send_line("ping " + std::to_string(ping));
      auto at = held("at", size_t(ping));
      if (!at) return Error(at.error());
      if (!*at) break;                              // the runner is not up: the request below finds out how
      if (s.setup.clock) s.setup.clock->prepare();  // as before a call: the runner's own code starts from a cold cache
      const std::optional<double> cpu_before = s.sandbox->command_cpu_us();
      s.sandbox->thaw();
      auto end = held("end", size_t(ping));
      if (!end) return Error(end.error());
      if (!*end) break;
      const std::optional<double> cpu_after = s.sandbox->command_cpu_us();
      s.sandbox->thaw();
      auto pong = answer();
      if (!pong) return Error(pong.error());
      if (!*pong || !parse_call_report(**pong)) break;
      if (!cpu_before || !cpu_after) continue;
      s.overhead_us = s.overhead_us == 0 ? *cpu_after - *cpu_before : std::min(s.overhead_us, *cpu_after - *cpu_before);
    }
  }
  std::vector<std::optional<CallReport>> reports(calls.size());
  std::vector<uint64_t> output_hashes(calls.size(), 0);
  bool alive = s.sandbox->running();
  if (alive) {
    s.sandbox->resume();
    s.sandbox->thaw();
    s.sandbox->send_line(request_path);
    auto ready = answer();
    if (!ready) return Error(ready.error());
    alive = ready->has_value();
    if (alive && **ready != "ready") protocol_error = "answered \"" + (*ready)->substr(0, 80) + "\" to its request";
  }
  for (size_t i = 0; alive && protocol_error.empty() && i < calls.size(); ++i) {
    const std::string call_line = "call " + std::to_string(i) + " " + std::to_string(calls[i].seed);
    std::optional<double> cpu_before, cpu_after;
    std::vector<uint64_t> input_hashes;
    std::vector<uint64_t> changed_inputs;
    if (s.setup.inputs) {
      // cpu: the runner stops itself right before the call ("at") and right after it ("end"); what the candidate's
      // process does with this call's inputs happens between the two, whoever reports when (docs/EXPLOITS.md, C4, late
      // writes), and the protocol's own work (the lines, the report) is outside.
      s.sandbox->send_line(call_line);
      auto at = held("at", i);
      if (!at) return Error(at.error());
      if (!*at) {
        alive = !protocol_error.empty();  // else it ended
        break;
      }
      // The runner can cut either file short, and writing a page the file lost would be SIGBUS here.
      const auto& offsets = s.setup.layout.offsets[i];
      bool whole = s.setup.inputs->holds(0, s.setup.inputs->size());
      for (size_t k = 0; k < offsets.size(); ++k)
        whole = whole && s.setup.region->holds(offsets[k], s.setup.output_sizes[k]);
      if (!whole) {
        protocol_error = "cut its input or output region short";
        break;
      }
      auto placed = place_inputs(s.setup, calls[i], i);
      if (!placed) return Error(placed.error());
      input_hashes = std::move(*placed);
      if (s.setup.clock) s.setup.clock->prepare();
      cpu_before = s.sandbox->command_cpu_us();
      s.sandbox->thaw();
      auto end = held("end", i);
      if (!end) return Error(end.error());
      if (!*end) {
        alive = !protocol_error.empty();
        break;
      }
      cpu_after = s.sandbox->command_cpu_us();
      // Fixed here, while it is stopped: nothing written after the call returned counts.
      output_hashes[i] = hash_outputs(*s.setup.region, s.setup.layout.offsets[i], s.setup.output_sizes);
      for (size_t k = 0; k < input_hashes.size(); ++k) {
        const auto& spec = s.setup.tensors[k];
        std::span<const uint8_t> slot(s.setup.inputs->data() + s.setup.input_layout.offsets[0][k],
                                      size_t(spec.numel()) * dtype_size(spec.dtype));
        if (hash_bytes(slot) != input_hashes[k]) changed_inputs.push_back(k);
      }
      s.sandbox->thaw();
    } else {
      // cuda: stopped between calls while this side checks the last call's outputs; the runner times the device.
      if (!s.sandbox->freeze()) {
        if (s.sandbox->running())
          return Error("cannot find the runner's process in its sandbox to stop it between calls");
        alive = false;
        break;
      }
      const auto call_started = SteadyClock::now();
      s.sandbox->thaw();
      s.sandbox->send_line(call_line);
      auto line = answer();
      if (!line) return Error(line.error());
      if (!line->has_value()) {
        alive = false;
        break;
      }
      const double call_us = microseconds(SteadyClock::now() - call_started);
      s.sandbox->freeze();
      auto report = parse_call_report(**line);
      if (!report || report->call != i) {
        protocol_error = "sent \"" + (*line)->substr(0, 80) + "\" as the report of call " + std::to_string(i);
        break;
      }
      if (report->wall_us > call_us || report->device_us > call_us) {
        // The device clock is the runner's; it cannot exceed the call as this side saw it.
        protocol_error = "reported call " + std::to_string(i) + " as longer than it took";
        break;
      }
      output_hashes[i] = hash_outputs(*s.setup.region, s.setup.layout.offsets[i], s.setup.output_sizes);
      reports[i] = std::move(*report);
      continue;
    }
    auto line = answer();
    if (!line) return Error(line.error());
    if (!line->has_value()) {
      alive = false;
      break;
    }
    auto report = parse_call_report(**line);
    if (!report || report->call != i) {
      protocol_error = "sent \"" + (*line)->substr(0, 80) + "\" as the report of call " + std::to_string(i);
      break;
    }
    // Not the runner's clock, which is in the candidate's process (docs/EXPLOITS.md, C4), but the CPU time the kernel
    // accounted to that whole process from the continue at "at" to the stop at "end": every thread's work until it
    // was stopped counts, and other processes' load on the machine does not. Less the protocol's own share (a
    // continue and a stop); over the threads it may use.
    if (!cpu_before || !cpu_after) return Error("cannot read the runner's CPU clock");
    const double cpu_us = std::max(0.0, *cpu_after - *cpu_before - s.overhead_us);
    report->wall_us = report->device_us = cpu_us / double(std::max(1, s.options.num_threads));
    report->changed_inputs = std::move(changed_inputs);
    report->inputs_changed = !report->changed_inputs.empty();
    reports[i] = std::move(*report);
  }
  outcome.elapsed_us = microseconds(SteadyClock::now() - started);
  if (alive && protocol_error.empty()) {
    outcome.sandbox.exit_code = 0;  // still running; it has reported this round
    // Stopped until the next round, so that nothing the candidate left running takes the cores, or queues GPU
    // work, while the baselines are timed.
    s.sandbox->pause();
  } else {
    // It ended (crashed, exited, or was killed at the wall limit), or broke the protocol, which only the candidate
    // can make it do: either way the session is over.
    auto result = s.sandbox->finish(k_session_exit_s);
    s.sandbox.reset();
    if (!result) return Error(result.error());
    s.ended = *result;
    outcome.sandbox = std::move(*result);
  }
  if (auto collected = collect(outcome, io_dir, s.setup, s.shapes, std::move(reports), output_hashes); !collected) {
    return Error(collected.error());
  }
  if (!protocol_error.empty() && outcome.untrusted.empty()) {
    outcome.untrusted = "the runner " + protocol_error + ", so its reports cannot be believed";
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
    if (ran.timed_out)
      return CallFailure{"timeout",
                         label + " did not finish within " + std::to_string(int(options.limits.wall_s)) + " s"};
    // The CPU limit is a time limit too (the tools set both from --timeout). A single-threaded spin reaches it first
    // when the supervisor wakes late on a loaded machine, and then it is the same hang.
    if (ran.limit_hit == "cpu") {
      std::string limit = std::to_string(int(std::ceil(options.limits.cpu_s)));
      return CallFailure{"timeout", label + " did not finish within " + limit + " s of CPU time"};
    }
    if (ran.exit_code == to_int(k_exit_tampered)) {
      return CallFailure{"run",
                         label + ": the runner stopped: its reports were tampered with; " + last_lines(ran.err, 5)};
    }
    if (ran.exit_code == to_int(k_exit_forbidden)) {
      return CallFailure{"run",
                         label + ": the candidate made a system call the sandbox forbids; " + last_lines(ran.err, 2)};
    }
    std::string message = label + " crashed: " +
                          (ran.signal ? "killed by signal " + std::to_string(ran.signal)
                                      : "exit status " + std::to_string(ran.exit_code)) +
                          (ran.limit_hit.empty() ? "" : " (" + ran.limit_hit + " limit)");
    if (std::string says = last_lines(ran.err, 5); !says.empty()) message += "; last output: " + says;
    return CallFailure{"run", message};
  }
  const CallReport& report = *call.report;
  if (!report.cuda_error.empty()) return CallFailure{"run", label + ": CUDA error " + report.cuda_error};
  if (report.rc != 0) {
    return CallFailure{"run", label + ": ca_forward returned " + std::to_string(report.rc) +
                                  (report.workspace_error.empty() ? "" : " after " + report.workspace_error)};
  }
  if (report.inputs_changed)
    return CallFailure{"run", label + ": the candidate modified its inputs; inputs must stay unchanged"};
  if (report.own_launches == 0) {
    return CallFailure{"launch", label +
                                     ": none of the candidate's own CUDA kernels launched; the outputs must come from "
                                     "its kernels (a decoy kernel, docs/EXPLOITS.md, A2)"};
  }
  if (!call.output_problem.empty()) return CallFailure{"run", label + ": " + call.output_problem};
  return std::nullopt;
}

}  // namespace ca
