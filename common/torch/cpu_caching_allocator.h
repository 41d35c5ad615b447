// A caching allocator for the CPU tensors of the trusted process: the cpu analogue of cuda's caching allocator, so
// that ca-profile's eager and compiled baselines reuse warm memory for their outputs and intermediates instead of
// taking fresh pages from the kernel inside their timed region (a 16 MiB output on fresh pages costs 4096 minor
// faults, several times the relu that writes it; glibc hands out fresh pages in some calls and not others, as its
// heap's history decides). The sandboxed runner pre-touches the candidate's buffers, so this evens the methods.
//
// Address reuse is harmless here: candidates run in a separate sandboxed process (ca-runner) and never see, or
// get, the trusted process's memory; only the baselines' own tensors are recycled among themselves.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include <c10/core/Allocator.h>

namespace ca {

/// Freed blocks go to a free list by block size (the request rounded up to 64 bytes, or to a 4 KiB page from one page
/// up) and are handed out again, most recently freed first, for the next request of that size; they go back to the
/// system only through empty_cache() or the allocator's destruction. Blocks are 64-byte aligned (c10::alloc_cpu, as
/// ATen's default allocator). Thread-safe: ATen frees from its worker threads.
///
/// Memory: the cache holds, for each block size, as many blocks as were ever live at once, so its bytes are at most
/// the sum over sizes of each size's peak; a workload that repeats the same shapes (a profile's rounds) holds about
/// its peak of live tensors and takes no new memory after its first call. Sizes that are never asked for again stay
/// cached until empty_cache(): ca-profile empties it after every record.
class CachingCpuAllocator final : public c10::Allocator {
 public:
  struct Stats {
    size_t live_blocks = 0, live_bytes = 0;      // handed out and not yet freed (block sizes)
    size_t cached_blocks = 0, cached_bytes = 0;  // freed, kept for reuse
    size_t system_allocations = 0;               // blocks ever taken from the system (c10::alloc_cpu)
  };

  CachingCpuAllocator() = default;
  CachingCpuAllocator(const CachingCpuAllocator&) = delete;
  CachingCpuAllocator& operator=(const CachingCpuAllocator&) = delete;
  /// Frees the cached blocks. Blocks still live are freed to the system when their tensors die.
  ~CachingCpuAllocator() override;

  c10::DataPtr allocate(size_t bytes) override;
  c10::DeleterFnPtr raw_deleter() const override;
  void copy_data(void* dest, const void* src, size_t count) const override;

  /// Returns every cached block to the system; live blocks are untouched.
  void empty_cache();
  Stats stats() const;

  /// The size of the block that serves a request of `bytes` (0 for 0: no block).
  static size_t block_size(size_t bytes);

 private:
  static void release(void* data);  // the deleter of every block

  // Guarded by one process-wide mutex, with the map of live blocks that lets release() find a block's owner
  // (c10's raw deleter gets the data pointer only).
  std::unordered_map<size_t, std::vector<void*>> m_free;  // block size -> cached blocks, last freed at the back
  Stats m_stats;
};

/// Makes one process-wide CachingCpuAllocator c10's CPU allocator (c10::SetCPUAllocator, priority above the default
/// allocator's), once; later calls return the same one. Tensors allocated before keep their own deleter. Returns it,
/// or nullptr when c10 kept another allocator (one registered with a higher priority). Never uninstalled or
/// destroyed: tensors may die during static destruction.
CachingCpuAllocator* install_caching_cpu_allocator();

/// The installed allocator, or nullptr before install_caching_cpu_allocator().
CachingCpuAllocator* installed_caching_cpu_allocator();

}  // namespace ca

// For processes that load the allocator as a shared library (bench/eager_torch.py through ctypes, target
// ca_cpu_allocator): 0 when c10's CPU allocator is now the caching one, 1 otherwise.
extern "C" int ca_install_cpu_caching_allocator(void);
// The installed allocator's live bytes (0 before install): lets a loader check that its torch allocates through it.
extern "C" size_t ca_cpu_caching_allocator_live_bytes(void);
