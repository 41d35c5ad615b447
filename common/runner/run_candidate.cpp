// The cpu runner loop (see run_candidate.h). Nothing here trusts the candidate: it gets fresh buffers every call,
// its outputs start as poison, its inputs are hashed around the call, and every result is on disk before the next call.
#include "runner/run_candidate.h"

#include <dlfcn.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <unordered_set>

#include "ca_kernel.h"
#include "ir/tensor_init.h"
#include "util/atomic_file.h"
#include "util/signals.h"

namespace ca {
namespace {

static_assert(int(DType::float32) == CA_FLOAT32 && int(DType::bfloat16) == CA_BFLOAT16 && int(DType::int64) == CA_INT64 &&
                  int(DType::uint8) == CA_UINT8 && int(DType::boolean) == CA_BOOL,
              "ca_dtype must follow the IR's dtype order");

using Error = std::unexpected<RunError>;
using ForwardFn = int (*)(ca_context*, const ca_tensor*, int, ca_tensor*, int);

// 64 bytes, as ATen's CPU allocator gives, so vectorized candidates may use aligned loads.
constexpr size_t k_alignment = 64;
// Past this a request is a bug or an attack on the runner, not a tensor.
constexpr size_t k_max_bytes = size_t(1) << 46;
constexpr int k_fresh_attempts = 16;

struct FreeDeleter {
  void operator()(uint8_t* data) const { std::free(data); }
};

struct Block {
  std::unique_ptr<uint8_t, FreeDeleter> data;
  size_t size = 0;  // bytes the tensor uses; the allocation is rounded up to k_alignment
  std::span<uint8_t> bytes() const { return {data.get(), size}; }
};

uint8_t* allocate_aligned(size_t bytes) {
  if (bytes > k_max_bytes) return nullptr;
  size_t rounded = std::max(k_alignment, (bytes + k_alignment - 1) / k_alignment * k_alignment);
  return static_cast<uint8_t*>(std::aligned_alloc(k_alignment, rounded));
}

// Hands out blocks at addresses no earlier call was given, so a candidate cannot key a cache on pointers
// (EXPLOITS C5): malloc and mmap happily return a just-freed address, so a reused one is held while asking again.
class FreshBuffers {
 public:
  std::expected<Block, RunError> take(size_t bytes, const std::string& what) {
    std::vector<Block> held;
    for (int attempt = 0; attempt < k_fresh_attempts; ++attempt) {
      Block block{std::unique_ptr<uint8_t, FreeDeleter>(allocate_aligned(bytes)), bytes};
      if (!block.data) return Error({RunFailure::io_error, "cannot allocate " + std::to_string(bytes) + " bytes for " + what});
      if (m_seen.insert(reinterpret_cast<uintptr_t>(block.data.get())).second) return block;
      held.push_back(std::move(block));
    }
    return Error({RunFailure::io_error, "no fresh address for " + what + " after " + std::to_string(k_fresh_attempts) + " tries"});
  }

 private:
  std::unordered_set<uintptr_t> m_seen;
};

// Scratch handed out through ctx->workspace during one call. The C callback has no closure, and ctx->harness is
// writable by the candidate, so the callback finds the current call's workspace here instead.
struct Workspace {
  std::mutex mutex;
  bool open = false;  // only while ca_forward runs; a straggling thread asking later gets NULL
  std::vector<Block> blocks;
};
Workspace g_workspace;

void* workspace_callback(ca_context*, size_t bytes) {
  std::lock_guard lock(g_workspace.mutex);
  if (!g_workspace.open) return nullptr;
  uint8_t* data = allocate_aligned(bytes);
  if (data == nullptr) return nullptr;
  // 0xFF bytes are a NaN in every float dtype, so scratch never holds a plausible stale value (EXPLOITS B1). The
  // poisoning is counted in wall_us: subtracting it would let other threads work for free meanwhile.
  std::memset(data, 0xFF, std::max(k_alignment, bytes));
  g_workspace.blocks.push_back({std::unique_ptr<uint8_t, FreeDeleter>(data), bytes});
  return data;
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
  std::vector<ca_tensor> tensors;

  void add(const std::vector<int64_t>& shape) {
    shapes.push_back(shape);
    strides.push_back(contiguous_strides(shape));
  }
  // Pointers into shapes/strides are taken once every tensor is added, since push_back may move them.
  void finish(std::vector<Block>& blocks, const std::vector<DType>& dtypes) {
    for (size_t i = 0; i < blocks.size(); ++i) {
      tensors.push_back({blocks[i].data.get(), int32_t(dtypes[i]), int32_t(shapes[i].size()), shapes[i].data(), strides[i].data()});
    }
  }
};

std::expected<void, RunError> append_line(FILE* stream, const Json& line, const std::string& path) {
  std::string text = line.dump() + "\n";
  if (std::fwrite(text.data(), 1, text.size(), stream) != text.size() || std::fflush(stream) != 0) {
    return Error({RunFailure::io_error, path + ": writing failed: " + std::strerror(errno)});
  }
  return {};
}

std::expected<void, RunError> write_outputs(const std::string& path, const std::vector<Block>& outputs) {
  auto file = AtomicFile::create(path);
  if (!file) return Error({RunFailure::io_error, file.error()});
  for (const auto& output : outputs) std::fwrite(output.data.get(), 1, output.size, file->stream());
  auto committed = file->commit();
  if (!committed) return Error({RunFailure::io_error, committed.error()});
  return {};
}

std::expected<CallReport, RunError> run_call(const RunRequest& request, size_t index, ForwardFn forward, FreshBuffers& fresh) {
  const CallSpec& call = request.calls[index];
  // Inputs: drawn the way the trusted side draws them, copied into a fresh block, hashed, and the draw freed.
  std::vector<Block> inputs;
  std::vector<uint64_t> hashes;
  TensorViews input_views;
  std::vector<DType> input_dtypes;
  const std::vector<TensorSpec>& tensors = call.tensors_or(request.tensors);
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorSpec& spec = tensors[i];
    std::vector<uint8_t> drawn = make_tensor_bytes(spec, call.seed, i);
    auto block = fresh.take(drawn.size(), "input '" + spec.name + "'");
    if (!block) return Error(block.error());
    if (!drawn.empty()) std::memcpy(block->data.get(), drawn.data(), drawn.size());
    hashes.push_back(hash_bytes(block->bytes()));
    input_views.add(spec.shape);
    input_dtypes.push_back(spec.dtype);
    inputs.push_back(std::move(*block));
  }
  input_views.finish(inputs, input_dtypes);

  std::vector<Block> outputs;
  TensorViews output_views;
  std::vector<DType> output_dtypes;
  for (size_t i = 0; i < request.outputs.size(); ++i) {
    const OutputSpec& spec = request.outputs[i];
    auto block = fresh.take(spec.bytes(), "output " + std::to_string(i));
    if (!block) return Error(block.error());
    fill_poison(spec.dtype, block->bytes());
    output_views.add(spec.shape);
    output_dtypes.push_back(spec.dtype);
    outputs.push_back(std::move(*block));
  }
  output_views.finish(outputs, output_dtypes);

  ca_context ctx{};
  ctx.abi_version = CA_ABI_VERSION;
  ctx.device = CA_DEVICE_CPU;
  ctx.device_index = request.device_index;
  ctx.num_threads = request.num_threads;
  ctx.workspace = workspace_callback;
  ctx.harness = &g_workspace;
  {
    std::lock_guard lock(g_workspace.mutex);
    g_workspace.open = true;
  }
  auto start = std::chrono::steady_clock::now();
  int rc = forward(&ctx, input_views.tensors.data(), int(input_views.tensors.size()), output_views.tensors.data(),
                   int(output_views.tensors.size()));
  auto stop = std::chrono::steady_clock::now();
  {
    std::lock_guard lock(g_workspace.mutex);
    g_workspace.open = false;
    g_workspace.blocks.clear();
  }

  CallReport result;
  result.call = index;
  result.seed = call.seed;
  result.rc = rc;
  result.wall_us = double(std::chrono::duration_cast<std::chrono::nanoseconds>(stop - start).count()) / 1000.0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (hash_bytes(inputs[i].bytes()) != hashes[i]) result.changed_inputs.push_back(i);
  }
  result.inputs_changed = !result.changed_inputs.empty();

  auto written = write_outputs((std::filesystem::path(request.output_dir) / call.output_file).string(), outputs);
  if (!written) return Error(written.error());
  return result;
}

struct FileCloser {
  void operator()(FILE* stream) const { std::fclose(stream); }
};

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
    case RunFailure::no_request: return ExitCode::no_input;
    case RunFailure::bad_request: return ExitCode::usage;
    case RunFailure::load_failed: return ExitCode::data_error;
    case RunFailure::io_error: return ExitCode::io_error;
    case RunFailure::interrupted: return ExitCode::interrupted;
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

std::expected<RunSummary, RunError> run_candidate(const RunRequest& request) {
  if (request.backend == Backend::cuda) {
    return Error({RunFailure::bad_request, "request.backend: cuda runner not built yet; this ca-runner runs cpu candidates only"});
  }
  std::error_code ec;
  std::filesystem::create_directories(request.output_dir, ec);
  if (ec) return Error({RunFailure::io_error, request.output_dir + ": cannot create: " + ec.message()});
  const std::string results_path = (std::filesystem::path(request.output_dir) / k_results_file).string();
  // Append, never truncate: a runner restarted after a crash must not erase the lines of calls that finished.
  std::unique_ptr<FILE, FileCloser> results(std::fopen(results_path.c_str(), "ae"));
  if (!results) return Error({RunFailure::io_error, results_path + ": cannot open: " + std::strerror(errno)});

  // OpenMP reads this when the library's runtime starts, which dlopen may trigger; ctx->num_threads says it later.
  setenv("OMP_NUM_THREADS", std::to_string(request.num_threads).c_str(), 1);
  // A bare file name would be searched for on the library path instead of taken as given.
  std::string library = request.library.find('/') == std::string::npos ? "./" + request.library : request.library;
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  std::string load_error;
  ForwardFn forward = nullptr;
  if (handle == nullptr) {
    const char* message = dlerror();
    load_error = message != nullptr ? message : request.library + ": dlopen failed";
  } else {
    forward = reinterpret_cast<ForwardFn>(dlsym(handle, "ca_forward"));
    if (forward == nullptr) load_error = request.library + ": no symbol ca_forward; the candidate must export extern \"C\" int ca_forward(...)";
  }
  if (!load_error.empty()) {
    auto written = append_line(results.get(), load_failed_event(load_error), results_path);
    if (!written) return Error(written.error());
    return Error({RunFailure::load_failed, load_error});
  }
  // The library stays loaded until exit: unloading could run code of a candidate that left threads behind.
  if (auto written = append_line(results.get(), loaded_event(), results_path); !written) return Error(written.error());

  RunSummary summary;
  FreshBuffers fresh;
  for (size_t i = 0; i < request.calls.size(); ++i) {
    if (interrupted()) return Error({RunFailure::interrupted, "interrupted before call " + std::to_string(i)});
    auto result = run_call(request, i, forward, fresh);
    if (!result) return Error(result.error());
    if (auto written = append_line(results.get(), to_json(*result), results_path); !written) return Error(written.error());
    ++summary.calls;
    if (!result->ok()) ++summary.failed;
  }
  return summary;
}

}  // namespace ca
