// The cpu backend's Device (see device.h): 64-byte aligned host buffers at addresses no earlier call was given.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <unordered_set>

#include "runner/device.h"

namespace ca {
namespace {

using Error = std::unexpected<RunError>;

// 64 bytes, as ATen's CPU allocator gives, so vectorized candidates may use aligned loads.
constexpr size_t k_alignment = 64;
// Past this a request is a bug or an attack on the runner, not a tensor.
constexpr size_t k_max_bytes = size_t(1) << 46;
constexpr int k_fresh_attempts = 16;

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

  std::expected<void*, RunError> fresh_copy(std::span<const uint8_t> contents, const std::string& what) override {
    auto block = fresh(contents.size(), what);
    if (!block) return Error(block.error());
    if (!contents.empty()) std::memcpy(*block, contents.data(), contents.size());
    return *block;
  }

  std::expected<void*, RunError> fresh_poisoned(DType dtype, size_t bytes, const std::string& what) override {
    auto block = fresh(bytes, what);
    if (!block) return Error(block.error());
    fill_poison(dtype, {*block, bytes});
    return *block;
  }

  std::expected<std::span<const uint8_t>, RunError> read(const void* data, size_t bytes,
                                                         std::vector<uint8_t>&) override {
    return std::span<const uint8_t>(static_cast<const uint8_t*>(data), bytes);
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
  }

 private:
  // malloc and mmap happily return a just-freed address, so a reused one is held while asking again.
  std::expected<uint8_t*, RunError> fresh(size_t bytes, const std::string& what) {
    std::vector<Block> held;
    for (int attempt = 0; attempt < k_fresh_attempts; ++attempt) {
      Block block(allocate_aligned(bytes));
      if (!block) {
        return Error({RunFailure::io_error, "cannot allocate " + std::to_string(bytes) + " bytes for " + what});
      }
      if (m_seen.insert(reinterpret_cast<uintptr_t>(block.get())).second) {
        m_call.push_back(std::move(block));
        return m_call.back().get();
      }
      held.push_back(std::move(block));
    }
    return Error({RunFailure::io_error,
                  "no fresh address for " + what + " after " + std::to_string(k_fresh_attempts) + " tries"});
  }

  std::unordered_set<uintptr_t> m_seen;
  std::vector<Block> m_call;     // this call's inputs and outputs
  std::vector<Block> m_scratch;  // this call's workspace
  std::unique_ptr<CallClock> m_clock = make_cpu_clock();
};

}  // namespace

std::unique_ptr<Device> make_cpu_device() {
  return std::make_unique<CpuDevice>();
}

}  // namespace ca
