#include "torch/cpu_caching_allocator.h"

#include <atomic>
#include <mutex>

#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/alloc_cpu.h>

namespace ca {
namespace {

constexpr size_t k_small_granule = 64;  // c10::gAlignment on x86-64 and aarch64 servers
constexpr size_t k_page = 4096;
// c10 registers its default CPU allocator with priority 0 and keeps the allocator of the highest priority.
constexpr uint8_t k_priority = 1;

struct LiveBlock {
  CachingCpuAllocator* owner;  // nullptr once the owner is destroyed: the block then goes back to the system
  size_t size;
};

// One mutex for every allocator and the map from a live block's data pointer to its owner and size.
struct Registry {
  std::mutex mutex;
  std::unordered_map<void*, LiveBlock> live;
};

Registry& registry() {
  static Registry* instance = new Registry();  // never destroyed: tensors may be freed during static destruction
  return *instance;
}

std::atomic<CachingCpuAllocator*> g_installed{nullptr};

}  // namespace

size_t CachingCpuAllocator::block_size(size_t bytes) {
  if (bytes == 0) return 0;
  size_t granule = bytes < k_page ? k_small_granule : k_page;
  return (bytes + granule - 1) / granule * granule;
}

CachingCpuAllocator::~CachingCpuAllocator() {
  Registry& shared = registry();
  std::lock_guard lock(shared.mutex);
  for (auto& [size, blocks] : m_free) {
    for (void* data : blocks) c10::free_cpu(data);
  }
  for (auto& [data, block] : shared.live) {
    if (block.owner == this) block.owner = nullptr;
  }
}

c10::DataPtr CachingCpuAllocator::allocate(size_t bytes) {
  const c10::Device cpu(c10::DeviceType::CPU);
  size_t size = block_size(bytes);
  if (size == 0) return {nullptr, nullptr, &release, cpu};
  Registry& shared = registry();
  void* data = nullptr;
  {
    std::lock_guard lock(shared.mutex);
    if (auto it = m_free.find(size); it != m_free.end() && !it->second.empty()) {
      data = it->second.back();
      it->second.pop_back();
      --m_stats.cached_blocks;
      m_stats.cached_bytes -= size;
    }
  }
  const bool fresh = data == nullptr;
  if (fresh) data = c10::alloc_cpu(size);  // outside the lock: it may throw (out of memory)
  std::lock_guard lock(shared.mutex);
  shared.live.emplace(data, LiveBlock{this, size});
  if (fresh) ++m_stats.system_allocations;
  ++m_stats.live_blocks;
  m_stats.live_bytes += size;
  return {data, data, &release, cpu};  // context == data, so raw_allocate/raw_deallocate work too
}

void CachingCpuAllocator::release(void* data) {
  if (data == nullptr) return;
  Registry& shared = registry();
  std::unique_lock lock(shared.mutex);
  auto it = shared.live.find(data);
  if (it == shared.live.end()) {
    lock.unlock();
    c10::free_cpu(data);  // not ours (cannot happen: only blocks from allocate() carry this deleter)
    return;
  }
  LiveBlock block = it->second;
  shared.live.erase(it);
  if (block.owner == nullptr) {
    lock.unlock();
    c10::free_cpu(data);
    return;
  }
  Stats& stats = block.owner->m_stats;
  --stats.live_blocks;
  stats.live_bytes -= block.size;
  block.owner->m_free[block.size].push_back(data);
  ++stats.cached_blocks;
  stats.cached_bytes += block.size;
}

c10::DeleterFnPtr CachingCpuAllocator::raw_deleter() const {
  return &release;
}

void CachingCpuAllocator::copy_data(void* dest, const void* src, size_t count) const {
  default_copy_data(dest, src, count);
}

void CachingCpuAllocator::empty_cache() {
  std::unordered_map<size_t, std::vector<void*>> cached;
  {
    std::lock_guard lock(registry().mutex);
    cached.swap(m_free);
    m_stats.cached_blocks = 0;
    m_stats.cached_bytes = 0;
  }
  for (auto& [size, blocks] : cached) {
    for (void* data : blocks) c10::free_cpu(data);
  }
}

CachingCpuAllocator::Stats CachingCpuAllocator::stats() const {
  std::lock_guard lock(registry().mutex);
  return m_stats;
}

CachingCpuAllocator* install_caching_cpu_allocator() {
  static CachingCpuAllocator* allocator = [] {
    auto* made = new CachingCpuAllocator();  // never destroyed, see the header
    c10::SetCPUAllocator(made, k_priority);
    if (c10::GetCPUAllocator() == made) g_installed.store(made);
    return made;
  }();
  return g_installed.load() == allocator ? allocator : nullptr;
}

CachingCpuAllocator* installed_caching_cpu_allocator() {
  return g_installed.load();
}

}  // namespace ca

extern "C" int ca_install_cpu_caching_allocator(void) {
  return ca::install_caching_cpu_allocator() ? 0 : 1;
}

extern "C" size_t ca_cpu_caching_allocator_live_bytes(void) {
  ca::CachingCpuAllocator* allocator = ca::installed_caching_cpu_allocator();
  return allocator ? allocator->stats().live_bytes : 0;
}
