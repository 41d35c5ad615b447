// The runner loop of both backends (see run_candidate.h; the buffers are a Device's, device.h). Nothing here trusts
// the candidate: it gets fresh buffers every call, its outputs start as poison, its inputs are checked after the
// call, and every result is in the output region and results.jsonl before the next call.
#include "runner/run_candidate.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <utility>

#include "ca_kernel.h"
#include "runner/device.h"
#include "runner/launches.h"
#include "runner/output_region.h"
#include "runner/seccomp.h"
#include "util/atomic_file.h"
#include "util/signals.h"

namespace ca {
namespace {

static_assert(int(DType::float32) == CA_FLOAT32 && int(DType::bfloat16) == CA_BFLOAT16 &&
                  int(DType::int64) == CA_INT64 && int(DType::uint8) == CA_UINT8 && int(DType::boolean) == CA_BOOL,
              "ca_dtype must follow the IR's dtype order");

using Error = std::unexpected<RunError>;

// Scratch handed out through ctx->workspace during one call. The C callback has no closure, and ctx->harness is
// writable by the candidate, so the callback finds the current call's device here instead.
struct Workspace {
  std::mutex mutex;
  Device* device = nullptr;  // only while ca_forward runs; a straggling thread asking later gets NULL
  std::string failure;       // the call's first request the device could not meet
};
Workspace g_workspace;

void* workspace_callback(ca_context*, size_t bytes) {
  std::lock_guard lock(g_workspace.mutex);
  if (g_workspace.device == nullptr) return nullptr;
  void* data = g_workspace.device->scratch(bytes);
  if (data == nullptr && g_workspace.failure.empty())
    g_workspace.failure = "ctx->workspace(" + std::to_string(bytes) + " bytes) returned NULL: out of memory";
  return data;
}

// Opens the workspace to `device`'s call, or closes it (nullptr) and returns the call's failed request.
std::string open_workspace(Device* device) {
  std::lock_guard lock(g_workspace.mutex);
  g_workspace.device = device;
  return std::exchange(g_workspace.failure, "");
}

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t stride = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= shape[i];
  }
  return strides;
}

// The ca_tensor views of one call's buffers. Shapes and strides are copied per call: the candidate could write
// through the const pointers, and the next call must not see that.
struct TensorViews {
  std::vector<std::vector<int64_t>> shapes, strides;
  std::vector<void*> data;
  std::vector<size_t> bytes;
  std::vector<DType> dtypes;
  std::vector<ca_tensor> tensors;

  void add(const std::vector<int64_t>& shape, DType dtype, void* buffer, size_t size) {
    shapes.push_back(shape);
    strides.push_back(contiguous_strides(shape));
    dtypes.push_back(dtype);
    data.push_back(buffer);
    bytes.push_back(size);
  }
  // Pointers into shapes/strides are taken once every tensor is added, since push_back may move them.
  void finish() {
    for (size_t i = 0; i < data.size(); ++i) {
      tensors.push_back({data[i], int32_t(dtypes[i]), int32_t(shapes[i].size()), shapes[i].data(), strides[i].data()});
    }
  }
};

struct FileCloser {
  void operator()(FILE* stream) const { std::fclose(stream); }
};

// results.jsonl, which only the runner may write. The candidate shares the process and may open the file by its path
// to add, rewrite or replace report lines (docs/EXPLOITS.md, C4), so before each line the file must still be the one
// opened, holding exactly what was there then and what the runner has written since. The candidate's last chance to
// write is its last call, and the runner's last line comes after it: any change is seen.
class ResultsFile {
 public:
  static std::expected<ResultsFile, RunError> open(const std::string& path) {
    ResultsFile file;
    file.m_path = path;
    // Appended to, never truncated: a runner restarted after a crash must not erase the lines of calls that finished.
    // Made only when it is missing: after the first request the storage filter refuses O_CREAT, so the trusted side
    // makes each later request's file (forbid_new_storage).
    int fd = ::open(path.c_str(), O_RDWR | O_APPEND | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) fd = ::open(path.c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0) {
      file.m_stream.reset(::fdopen(fd, "a+"));
      if (!file.m_stream) ::close(fd);
    }
    if (!file.m_stream) return Error({RunFailure::io_error, path + ": cannot open: " + std::strerror(errno)});
    auto content = file.read_all();
    if (!content) return Error(content.error());
    file.m_written = std::move(*content);
    struct stat opened {};
    if (::fstat(fileno(file.m_stream.get()), &opened) != 0)
      return Error({RunFailure::io_error, path + ": " + std::strerror(errno)});
    file.m_device = opened.st_dev;
    file.m_inode = opened.st_ino;
    return file;
  }

  std::expected<void, RunError> append(const Json& line) {
    if (auto intact = check(); !intact) return Error(intact.error());
    std::string text = line.dump() + "\n";
    if (std::fwrite(text.data(), 1, text.size(), m_stream.get()) != text.size() || std::fflush(m_stream.get()) != 0) {
      return Error({RunFailure::io_error, m_path + ": writing failed: " + std::strerror(errno)});
    }
    m_written += text;
    return {};
  }

 private:
  std::expected<std::string, RunError> read_all() {
    std::string content;
    char buffer[65536];
    for (off_t offset = 0;;) {
      ssize_t got = ::pread(fileno(m_stream.get()), buffer, sizeof buffer, offset);
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) return Error({RunFailure::io_error, m_path + ": reading back failed: " + std::strerror(errno)});
      if (got == 0) return content;
      content.append(buffer, size_t(got));
      offset += got;
    }
  }

  std::expected<void, RunError> check() {
    struct stat named {};
    bool same_file = ::stat(m_path.c_str(), &named) == 0 && named.st_dev == m_device && named.st_ino == m_inode;
    auto content = read_all();
    if (!content) return Error(content.error());
    if (same_file && *content == m_written) return {};
    return Error(
        {RunFailure::tampered, m_path + ": " + (same_file ? "changed" : "replaced") +
                                   " by a writer other than the runner (the candidate), so no report of this run "
                                   "can be believed"});
  }

  std::unique_ptr<FILE, FileCloser> m_stream;
  std::string m_path;
  std::string m_written;  // the file's whole content as it must be
  dev_t m_device = 0;
  ino_t m_inode = 0;
};

// The request's seeds and results.jsonl: ca-runner REQUEST (tests, debugging). The trusted side never uses it.
class FileChannel final : public CallChannel {
 public:
  explicit FileChannel(ResultsFile& results) : m_results(results) {}
  std::expected<void, RunError> ready() override { return {}; }
  std::expected<uint64_t, RunError> start(size_t, const CallSpec& call) override { return call.seed; }
  std::expected<void, RunError> report(const CallReport& report) override { return m_results.append(to_json(report)); }

 private:
  ResultsFile& m_results;
};

std::expected<void, RunError> write_line(int fd, std::string_view text) {
  for (size_t sent = 0; sent < text.size();) {
    ssize_t w = ::write(fd, text.data() + sent, text.size() - sent);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return Error({RunFailure::io_error, std::string("stdout: ") + std::strerror(errno)});
    sent += size_t(w);
  }
  return {};
}

struct LineBuffer {
  char* data = nullptr;
  size_t capacity = 0;
  ~LineBuffer() { std::free(data); }
};

// One line from the trusted side without its newline; nullopt at end of input.
std::expected<std::optional<std::string>, RunError> read_line(FILE* in, LineBuffer& line) {
  for (;;) {
    errno = 0;
    ssize_t n = ::getline(&line.data, &line.capacity, in);
    if (interrupted()) return Error({RunFailure::interrupted, "interrupted while waiting for the trusted side"});
    if (n < 0) {
      if (errno == EINTR) {
        std::clearerr(in);
        continue;
      }
      if (std::ferror(in)) return Error({RunFailure::io_error, std::string("stdin: ") + std::strerror(errno)});
      return std::nullopt;
    }
    std::string text(line.data, size_t(n));
    if (!text.empty() && text.back() == '\n') text.pop_back();
    return text;
  }
}

// A fault right after an allocation failed (errno ENOMEM on the faulting thread: malloc's NULL used) is the memory
// share, not a bug of another kind: says so on stderr, where the trusted side's limit_hit finds "out of memory", then
// dies of the signal as it would have. The candidate may replace the handler; then its fault is only a crash.
void on_fault(int signal, siginfo_t*, void*) {
  if (errno == ENOMEM) {
    rlimit limit{};
    ::getrlimit(RLIMIT_AS, &limit);
    char line[200];
    int n = std::snprintf(line, sizeof line,
                          "ca-runner: signal %d after an allocation failed: out of memory (the address-space limit "
                          "of %llu bytes is the candidate's memory share)\n",
                          signal, static_cast<unsigned long long>(limit.rlim_cur));
    if (n > 0) (void)!::write(2, line, size_t(n));
  }
  ::signal(signal, SIG_DFL);
  ::raise(signal);
}

void name_memory_faults() {
  struct sigaction action {};
  action.sa_sigaction = on_fault;
  action.sa_flags = SA_SIGINFO | SA_RESETHAND;
  for (int signal : {SIGSEGV, SIGBUS}) ::sigaction(signal, &action, nullptr);
}

// "<mark> <index>" on the pipe, then the whole process stops itself until the trusted side continues it. The line is
// formatted on the stack and the stop is one system call, so that the edges of a timed window hold as little of the
// runner's own work as possible: the ping (serve_requests) holds the same.
std::expected<void, RunError> stop_at(int out_fd, const char* mark, size_t index) {
  char line[64];
  int n = std::snprintf(line, sizeof line, "%s %zu\n", mark, index);
  if (auto sent = write_line(out_fd, std::string_view(line, size_t(n))); !sent) return Error(sent.error());
  if (::kill(::getpid(), SIGSTOP) != 0)
    return Error({RunFailure::io_error, std::string("SIGSTOP: ") + std::strerror(errno)});
  return {};
}

// The serve pipe (serve_requests): a call starts when its line comes, and its report goes back as a line.
class PipeChannel final : public CallChannel {
 public:
  PipeChannel(FILE* in, int out, LineBuffer& line) : m_in(in), m_out(out), m_line(line) {}
  std::expected<void, RunError> ready() override { return write_line(m_out, "ready\n"); }
  std::expected<uint64_t, RunError> start(size_t index, const CallSpec&) override {
    auto line = read_line(m_in, m_line);
    if (!line) return Error(line.error());
    if (!*line) return Error({RunFailure::bad_request, "input ended before call " + std::to_string(index)});
    unsigned long long got = 0, seed = 0;
    int used = 0;
    if (std::sscanf((*line)->c_str(), "call %llu %llu%n", &got, &seed, &used) != 2 || size_t(used) != (*line)->size() ||
        got != index) {
      return Error({RunFailure::bad_request,
                    "expected \"call " + std::to_string(index) + " <seed>\", got \"" + (*line)->substr(0, 80) + "\""});
    }
    return uint64_t(seed);
  }
  std::expected<void, RunError> report(const CallReport& report) override {
    return write_line(m_out, to_json(report).dump() + "\n");
  }
  std::expected<void, RunError> hold(const char* mark, size_t index) override { return stop_at(m_out, mark, index); }

 private:
  FILE* m_in;
  int m_out;
  LineBuffer& m_line;
};

// Into the call's slices of the output region. The call's results line, appended after it, is what says they are
// there: the trusted side reads the outputs of reported calls only.
std::expected<int64_t, RunError> write_outputs(OutputRegion& region, const CallSpec& call, Device& device,
                                               const TensorViews& outputs) {
  int64_t written = 0;
  for (size_t i = 0; i < outputs.data.size(); ++i) {
    // parse_request checked that every slice lies inside the region.
    std::span<uint8_t> slice(region.data() + call.output_offsets[i], outputs.bytes[i]);
    if (auto copied = device.copy_out(outputs.data[i], slice); !copied) return Error(copied.error());
    written += int64_t(outputs.bytes[i]);
  }
  return written;
}

struct CallRun {
  CallReport report;
  bool context_lost = false;
};

// A served cpu call on the trusted side's regions (RunRequest::input_region): the inputs are where the trusted side
// wrote them and the candidate writes its outputs straight into their slices, poisoned there by the trusted side,
// which also checks both after the call. Nothing but the call itself happens between the "call" line and the report.
std::expected<CallRun, RunError> run_call_in_place(const RunRequest& request, size_t index, uint64_t seed,
                                                   ForwardFn forward, Device& device, const OutputRegion& inputs_region,
                                                   OutputRegion& region, CallChannel& channel) {
  const CallSpec& call = request.calls[index];
  TensorViews inputs, outputs;
  for (size_t i = 0; i < request.tensors.size(); ++i) {
    const TensorSpec& spec = request.tensors[i];
    inputs.add(spec.shape, spec.dtype, inputs_region.data() + request.input_offsets[i],
               size_t(spec.numel()) * dtype_size(spec.dtype));
  }
  inputs.finish();
  int64_t written = 0;
  for (size_t i = 0; i < request.outputs.size(); ++i) {
    const OutputSpec& spec = request.outputs[i];
    outputs.add(spec.shape, spec.dtype, region.data() + call.output_offsets[i], spec.bytes());
    written += int64_t(spec.bytes());
  }
  outputs.finish();
  ca_context ctx{};
  ctx.abi_version = CA_ABI_VERSION;
  ctx.device_index = request.device_index;
  ctx.num_threads = request.num_threads;
  ctx.workspace = workspace_callback;
  ctx.harness = &g_workspace;
  device.fill_context(ctx);
  CallClock& clock = device.clock();
  open_workspace(&device);
  // The trusted side writes the inputs while the process is stopped here and counts its CPU time from the continue
  // to the stop after the call: the call and nothing of the protocol's (the line, its parse, the report).
  if (auto held = channel.hold("at", index); !held) return Error(held.error());
  clock.start();
  int rc = forward(&ctx, inputs.tensors.data(), int(inputs.tensors.size()), outputs.tensors.data(),
                   int(outputs.tensors.size()));
  ClockSample sample = clock.stop();
  if (auto held = channel.hold("end", index); !held) return Error(held.error());
  open_workspace(nullptr);
  device.end_call();
  CallRun run;
  run.report.call = index;
  run.report.seed = seed;
  run.report.rc = rc;
  run.report.wall_us = sample.host_us;  // the runner's own clock: diagnosis only, the trusted side times the call
  run.report.device_us = sample.device_us;
  run.report.output_bytes = written;
  return run;
}

std::expected<CallRun, RunError> run_call(const RunRequest& request, size_t index, uint64_t seed, ForwardFn forward,
                                          Device& device, OutputRegion& region) {
  CallSpec call = request.calls[index];
  call.seed = seed;
  // Inputs: drawn the way the trusted side draws them, straight into fresh buffers (on the GPU for cuda).
  TensorViews inputs;
  const std::vector<TensorSpec>& tensors = call.tensors_or(request.tensors);
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorSpec& spec = tensors[i];
    auto buffer = device.fresh_input(spec, call.seed, i, "input '" + spec.name + "'");
    if (!buffer) return Error(buffer.error());
    inputs.add(spec.shape, spec.dtype, *buffer, size_t(spec.numel()) * dtype_size(spec.dtype));
  }
  inputs.finish();

  TensorViews outputs;
  for (size_t i = 0; i < request.outputs.size(); ++i) {
    const OutputSpec& spec = request.outputs[i];
    auto buffer = device.fresh_poisoned(spec.dtype, spec.bytes(), "output " + std::to_string(i));
    if (!buffer) return Error(buffer.error());
    outputs.add(spec.shape, spec.dtype, *buffer, spec.bytes());
  }
  outputs.finish();

  ca_context ctx{};
  ctx.abi_version = CA_ABI_VERSION;
  ctx.device_index = request.device_index;
  ctx.num_threads = request.num_threads;
  ctx.workspace = workspace_callback;
  ctx.harness = &g_workspace;
  device.fill_context(ctx);
  if (auto ready = device.before_call(); !ready) return Error(ready.error());
  // Every call is timed the same way, so a candidate cannot tell a checked call from a timed one (docs/EXPLOITS.md,
  // B12).
  CallClock& clock = device.clock();
  clock.prepare();
  open_workspace(&device);
  reset_launches();
  clock.start();
  int rc = forward(&ctx, inputs.tensors.data(), int(inputs.tensors.size()), outputs.tensors.data(),
                   int(outputs.tensors.size()));
  ClockSample sample = clock.stop();
  CallOutcome outcome = device.after_call();
  std::string workspace_failure = open_workspace(nullptr);

  CallRun run;
  CallReport& result = run.report;
  result.call = index;
  result.seed = call.seed;
  result.rc = rc;
  result.wall_us = sample.host_us;
  result.device_us = sample.device_us;
  result.cuda_error = outcome.cuda_error;
  result.workspace_error = std::move(workspace_failure);
  if (request.backend == Backend::cuda) result.own_launches = own_launches();
  // A dead context can show nothing back; the call has failed anyway.
  if (outcome.context_lost) {
    run.context_lost = true;
    return run;
  }
  for (size_t i = 0; i < inputs.data.size(); ++i) {
    auto changed = device.input_changed(inputs.data[i], tensors[i], call.seed, i);
    if (!changed) return Error(changed.error());
    if (*changed) result.changed_inputs.push_back(i);
  }
  result.inputs_changed = !result.changed_inputs.empty();

  // Outputs of a call with a CUDA error are not evidence of anything; without output_bytes no reader takes them.
  if (result.cuda_error.empty()) {
    auto written = write_outputs(region, call, device, outputs);
    if (!written) return Error(written.error());
    result.output_bytes = *written;
  }
  device.end_call();
  return run;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::expected<std::unique_ptr<Device>, RunError> make_device(const RunRequest& request) {
  if (request.backend == Backend::cuda) return make_cuda_device(request.device_index);
  return make_cpu_device();
}

}  // namespace

uint64_t hash_bytes(std::span<const uint8_t> bytes) {
  // Each step (x ^ w) * odd, rotated, is a bijection of the lane for a fixed word and of the word for a fixed lane,
  // so changing one word always changes its lane, and the final mix is a bijection of every lane.
  constexpr uint64_t k_mul = 0x9E3779B97F4A7C15ull;
  uint64_t lanes[4] = {0x243F6A8885A308D3ull, 0x13198A2E03707344ull, 0xA4093822299F31D0ull, 0x082EFA98EC4E6C89ull};
  auto step = [](uint64_t lane, uint64_t word) { return std::rotl((lane ^ word) * k_mul, 29); };
  const size_t words = bytes.size() / 8;
  size_t i = 0;
  for (; i + 4 <= words; i += 4) {
    for (size_t j = 0; j < 4; ++j) {
      uint64_t word;
      std::memcpy(&word, bytes.data() + (i + j) * 8, 8);
      lanes[j] = step(lanes[j], word);
    }
  }
  for (; i < words; ++i) {
    uint64_t word;
    std::memcpy(&word, bytes.data() + i * 8, 8);
    lanes[0] = step(lanes[0], word);
  }
  uint64_t tail = 0;
  if (bytes.size() % 8 != 0) std::memcpy(&tail, bytes.data() + words * 8, bytes.size() % 8);
  lanes[1] = step(lanes[1], tail);
  uint64_t hash = bytes.size();
  for (uint64_t lane : lanes) hash = std::rotl((hash ^ lane) * k_mul, 31);
  return hash ^ (hash >> 32);
}

ExitCode exit_code_of(RunFailure failure) {
  switch (failure) {
    case RunFailure::no_request:
      return ExitCode::no_input;
    case RunFailure::bad_request:
      return ExitCode::usage;
    case RunFailure::load_failed:
      return ExitCode::data_error;
    case RunFailure::io_error:
      return ExitCode::io_error;
    case RunFailure::interrupted:
      return ExitCode::interrupted;
    case RunFailure::no_device:
      return k_exit_no_device;
    case RunFailure::context_lost:
      return k_exit_context_lost;
    case RunFailure::tampered:
      return k_exit_tampered;
  }
  return ExitCode::io_error;
}

std::expected<RunRequest, RunError> read_request(const std::string& path) {
  auto text = read_file(path);
  if (!text) {
    // ca-runner names the request file in front of every message already.
    std::string message = text.error().starts_with(path + ": ") ? text.error().substr(path.size() + 2) : text.error();
    return Error({RunFailure::no_request, message});
  }
  auto request = parse_request_text(*text);
  if (!request) return Error({RunFailure::bad_request, request.error()});
  return *request;
}

CandidateRunner::CandidateRunner() = default;
CandidateRunner::~CandidateRunner() = default;

std::expected<RunSummary, RunError> CandidateRunner::run(const RunRequest& request) {
  return run_request(request, nullptr);
}

std::expected<RunSummary, RunError> CandidateRunner::run(const RunRequest& request, CallChannel& channel) {
  return run_request(request, &channel);
}

std::expected<RunSummary, RunError> CandidateRunner::run_request(const RunRequest& request, CallChannel* channel) {
  const bool first = m_device == nullptr;
  if (first) {
    // cuda: the context exists before the library loads, so nothing the library's initialisers do precedes it.
    auto started = std::chrono::steady_clock::now();
    auto device = make_device(request);
    if (!device) return Error(device.error());
    m_device = std::move(*device);
    m_facts["device_s"] = seconds_since(started);
    m_first = request;
    m_first.calls.clear();
  } else if (request.library != m_first.library || request.backend != m_first.backend ||
             request.device_index != m_first.device_index || request.num_threads != m_first.num_threads) {
    return Error({RunFailure::bad_request,
                  "this runner serves " + m_first.library + " (" + std::string(backend_name(m_first.backend)) +
                      " device " + std::to_string(m_first.device_index) + ", " + std::to_string(m_first.num_threads) +
                      " threads); a request for another library or device needs another runner"});
  }
  // Mapped once and kept while requests name the same region (ca-profile's rounds); pinned for DMA on cuda.
  if (!m_region || m_region->path() != request.output_region.path || m_region->size() != request.output_region.bytes) {
    m_region.reset();
    auto started = std::chrono::steady_clock::now();
    auto region = OutputRegion::open(request.output_region.path, request.output_region.bytes);
    if (!region) return Error({RunFailure::io_error, region.error()});
    m_region = std::move(*region);
    if (request.backend == Backend::cuda) {
      auto pinned = m_region->pin();
      m_facts["region"] = pinned ? "page-locked" : "pageable: " + pinned.error();
    }
    m_facts["region_s"] = seconds_since(started);
  }
  if (!request.input_region) {
    m_inputs.reset();
  } else if (!m_inputs || m_inputs->path() != request.input_region->path ||
             m_inputs->size() != request.input_region->bytes) {
    m_inputs.reset();
    auto inputs = OutputRegion::open(request.input_region->path, request.input_region->bytes);
    if (!inputs) return Error({RunFailure::io_error, inputs.error()});
    m_inputs = std::move(*inputs);
  }
  std::error_code ec;
  std::filesystem::create_directories(request.output_dir, ec);
  if (ec) return Error({RunFailure::io_error, request.output_dir + ": cannot create: " + ec.message()});
  const std::string results_path = (std::filesystem::path(request.output_dir) / k_results_file).string();
  auto results = ResultsFile::open(results_path);
  if (!results) return Error(results.error());

  if (first) {
    // OpenMP reads this when the library's runtime starts, which dlopen may trigger; ctx->num_threads says it later.
    setenv("OMP_NUM_THREADS", std::to_string(request.num_threads).c_str(), 1);
    // A bare file name would be searched for on the library path instead of taken as given.
    std::string library = request.library.find('/') == std::string::npos ? "./" + request.library : request.library;
    // From here on the process is the candidate's too: its initialisers run inside dlopen.
    if (auto filtered = forbid_processes_and_signals(); !filtered) {
      return Error({RunFailure::io_error, "cannot install the seccomp filter: " + filtered.error()});
    }
    // cpu: no storage beyond the regions and the address-space limit (the disk and memory shares). Not yet on cuda,
    // whose driver may make files (its JIT cache) and pipes: untested there (docs/EXPLOITS.md).
    if (request.backend == Backend::cpu) {
      if (auto filtered = forbid_new_storage(); !filtered) {
        return Error({RunFailure::io_error, "cannot install the seccomp filter: " + filtered.error()});
      }
    }
    name_memory_faults();
    auto started = std::chrono::steady_clock::now();
    void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    m_facts["load_s"] = seconds_since(started);
    std::string load_error;
    if (handle == nullptr) {
      const char* message = dlerror();
      load_error = message != nullptr ? message : request.library + ": dlopen failed";
    } else {
      m_forward = reinterpret_cast<ForwardFn>(dlsym(handle, "ca_forward"));
      if (m_forward == nullptr) {
        load_error =
            request.library + ": no symbol ca_forward; the candidate must export extern \"C\" int ca_forward(...)";
      } else {
        watch_launches_from(reinterpret_cast<const void*>(m_forward));
        // The libraries it needs are mapped now; nothing loads after (cuda's driver may still map code: not there).
        if (request.backend == Backend::cpu) {
          if (auto filtered = forbid_new_code(); !filtered) {
            return Error({RunFailure::io_error, "cannot install the seccomp filter: " + filtered.error()});
          }
        }
      }
    }
    if (!load_error.empty()) {
      auto written = results->append(load_failed_event(load_error));
      if (!written) return Error(written.error());
      return Error({RunFailure::load_failed, load_error});
    }
  }
  // The library stays loaded until exit: unloading could run code of a candidate that left threads behind. Every
  // request's results say it is loaded, so each results.jsonl reads as a runner's whole run.
  if (auto written = results->append(loaded_event(m_facts)); !written) return Error(written.error());
  FileChannel file_channel(*results);
  CallChannel& calls = channel != nullptr ? *channel : file_channel;
  if (auto ready = calls.ready(); !ready) return Error(ready.error());

  RunSummary summary;
  for (size_t i = 0; i < request.calls.size(); ++i) {
    if (interrupted()) return Error({RunFailure::interrupted, "interrupted before call " + std::to_string(i)});
    auto seed = calls.start(i, request.calls[i]);
    if (!seed) return Error(seed.error());
    auto run = m_inputs ? run_call_in_place(request, i, *seed, m_forward, *m_device, *m_inputs, *m_region, calls)
                        : run_call(request, i, *seed, m_forward, *m_device, *m_region);
    if (!run) return Error(run.error());
    if (auto written = calls.report(run->report); !written) return Error(written.error());
    ++summary.calls;
    if (!run->report.ok()) ++summary.failed;
    if (run->context_lost) {
      return Error({RunFailure::context_lost, "call " + std::to_string(i) + ": " + run->report.cuda_error +
                                                  "; the CUDA context is lost, so the remaining calls cannot run"});
    }
  }
  return summary;
}

std::expected<void, RunError> serve_requests(int in_fd, int out_fd, CandidateRunner& runner) {
  std::unique_ptr<FILE, FileCloser> in(::fdopen(in_fd, "re"));
  if (!in) return Error({RunFailure::io_error, std::string("stdin: ") + std::strerror(errno)});
  LineBuffer line;
  PipeChannel channel(in.get(), out_fd, line);
  for (;;) {
    auto next = read_line(in.get(), line);
    if (!next) return Error(next.error());
    if (!*next) return {};  // end of input: the trusted side is finished
    std::string path = std::move(**next);
    if (path.empty()) continue;
    // Answered as a call is, less the call itself (the same parse, report and write), so that the trusted side's
    // measure of this is the runner's share of every call's time.
    unsigned long long ping = 0;
    int used = 0;
    if (std::sscanf(path.c_str(), "ping %llu%n", &ping, &used) == 1 && size_t(used) == path.size()) {
      for (const char* mark : {"at", "end"}) {
        if (auto held = stop_at(out_fd, mark, size_t(ping)); !held) return Error(held.error());
      }
      CallReport pong;
      pong.call = ping;
      if (auto sent = write_line(out_fd, to_json(pong).dump() + "\n"); !sent) return Error(sent.error());
      continue;
    }
    auto request = read_request(path);
    if (!request) return Error({request.error().failure, path + ": " + request.error().message});
    auto summary = runner.run(*request, channel);
    if (!summary) return Error({summary.error().failure, path + ": " + summary.error().message});
  }
}

}  // namespace ca
