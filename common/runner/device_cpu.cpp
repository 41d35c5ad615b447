// The cpu backend's Device (see device.h): 64-byte aligned host buffers at addresses no earlier call was given.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ir/tensor_init.h"
#include "runner/device.h"

namespace ca {
namespace {

using Error = std::unexpected<RunError>;

// 64 bytes, as ATen's CPU allocator gives, so vectorized candidates may use aligned loads.
constexpr size_t k_alignment = 64;
// Past this a request is a bug or an attack on the runner, not a tensor.
constexpr size_t k_max_bytes = size_t(1) << 46;
constexpr int k_fresh_attempts = 64;
// Buffers are mapped upwards from 16 TiB, far below where the kernel places shared libraries and plain mmaps
// (near 128 TiB) and far above the heap; a collision only skips ahead. ThreadSanitizer keeps its shadow memory there
// and ends a process that maps into it, so its builds start at 256 GiB, inside the low range it leaves to programs.
#if defined(__SANITIZE_THREAD__)
constexpr uintptr_t k_first_address = uintptr_t(1) << 38;
#else
constexpr uintptr_t k_first_address = uintptr_t(1) << 44;
#endif
constexpr uintptr_t k_skip = uintptr_t(1) << 30;

struct FreeDeleter {
  void operator()(uint8_t* data) const { std::free(data); }
};
using Block = std::unique_ptr<uint8_t, FreeDeleter>;

uint8_t* allocate_aligned(size_t bytes) {
  if (bytes > k_max_bytes) return nullptr;
  size_t rounded = std::max(k_alignment, (bytes + k_alignment - 1) / k_alignment * k_alignment);
  return static_cast<uint8_t*>(std::aligned_alloc(k_alignment, rounded));
}

class CpuDevice final : public Device {
 public:
  void fill_context(ca_context& ctx) override {
    ctx.device = CA_DEVICE_CPU;
    ctx.stream = nullptr;
    ctx.cublas = nullptr;
    ctx.cudnn = nullptr;
  }

  std::expected<void*, RunError> fresh_input(const TensorSpec& spec, uint64_t seed, uint64_t stream,
                                             const std::string& what) override {
    const size_t bytes = size_t(spec.numel()) * dtype_size(spec.dtype);
    auto block = fresh(bytes, what);
    if (!block) return Error(block.error());
    std::span<uint8_t> input(*block, bytes);
    if (auto drawn = draw_tensor(spec, seed, stream, input); !drawn)
      return Error({RunFailure::bad_request, drawn.error()});
    // Hashing is far cheaper than drawing again on the host.
    m_input_hashes[*block] = hash_bytes(input);
    return *block;
  }

  std::expected<bool, RunError> input_changed(const void* data, const TensorSpec& spec, uint64_t, uint64_t) override {
    const size_t bytes = size_t(spec.numel()) * dtype_size(spec.dtype);
    return hash_bytes({static_cast<const uint8_t*>(data), bytes}) != m_input_hashes.at(data);
  }

  std::expected<void*, RunError> fresh_poisoned(DType dtype, size_t bytes, const std::string& what) override {
    auto block = fresh(bytes, what);
    if (!block) return Error(block.error());
    fill_poison(dtype, {*block, bytes});
    return *block;
  }

  std::expected<void, RunError> copy_out(const void* data, std::span<uint8_t> to) override {
    if (!to.empty()) std::memcpy(to.data(), data, to.size());
    return {};
  }

  std::expected<void, RunError> before_call() override { return {}; }
  CallOutcome after_call() override { return {}; }

  CallClock& clock() override { return *m_clock; }

  void* scratch(size_t bytes) override {
    uint8_t* data = allocate_aligned(bytes);
    if (data == nullptr) return nullptr;
    // The poisoning is counted in wall_us: subtracting it would let other threads work for free meanwhile.
    std::memset(data, 0xFF, std::max(k_alignment, bytes));
    m_scratch.emplace_back(data);
    return data;
  }

  void end_call() override {
    m_scratch.clear();
    m_call.clear();
    m_input_hashes.clear();
  }

 private:
  // malloc and plain mmap hand a just-freed address out again, and a profile makes hundreds of calls. Each buffer is
  // mapped at the next address above every earlier one instead, and unmapped after its call: addresses are never
  // reused (docs/EXPLOITS.md, C5) and memory is not kept. The kernel refuses (EEXIST) a range something else holds;
  // skip it.
  std::expected<uint8_t*, RunError> fresh(size_t bytes, const std::string& what) {
    if (bytes > k_max_bytes)
      return Error({RunFailure::io_error, "cannot allocate " + std::to_string(bytes) + " bytes for " + what});
    const size_t page = size_t(sysconf(_SC_PAGESIZE));
    const size_t size = std::max(page, (bytes + page - 1) / page * page);
    for (int attempt = 0; attempt < k_fresh_attempts; ++attempt) {
      void* want = reinterpret_cast<void*>(m_next);
      void* got = mmap(want, size, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
      // A guard page between buffers, so an overrun faults instead of reaching the next tensor.
      m_next += size + page;
      if (got == want) {
        m_call.emplace_back(static_cast<uint8_t*>(got), size);
        return static_cast<uint8_t*>(got);
      }
      if (got != MAP_FAILED)
        munmap(got, size);  // a kernel without MAP_FIXED_NOREPLACE took it as a hint
      else if (errno == ENOMEM)
        break;
      m_next += k_skip;
    }
    return Error(
        {RunFailure::io_error, "cannot map " + std::to_string(bytes) + " bytes for " + what + " at a fresh address"});
  }

  struct Mapping {
    Mapping(uint8_t* data, size_t size) : data(data), size(size) {}
    Mapping(Mapping&& other) noexcept : data(std::exchange(other.data, nullptr)), size(other.size) {}
    Mapping(const Mapping&) = delete;
    ~Mapping() {
      if (data != nullptr) munmap(data, size);
    }
    uint8_t* data;
    size_t size;
  };

  uintptr_t m_next = k_first_address;
  std::vector<Mapping> m_call;                               // this call's inputs and outputs
  std::vector<Block> m_scratch;                              // this call's workspace
  std::unordered_map<const void*, uint64_t> m_input_hashes;  // this call's inputs, as fresh_input made them
  std::unique_ptr<CallClock> m_clock = make_cpu_clock();
};

}  // namespace

std::unique_ptr<Device> make_cpu_device() {
  return std::make_unique<CpuDevice>();
}

}  // namespace ca
