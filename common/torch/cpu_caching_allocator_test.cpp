#include "torch/cpu_caching_allocator.h"

#include <cstdint>
#include <cstring>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include <ATen/ATen.h>
#include <c10/core/CPUAllocator.h>
#include <gtest/gtest.h>

namespace ca {
namespace {

constexpr size_t k_sizes[] = {16 << 20, 1000, 3 * 4096 + 1, 64};

std::set<void*> allocate_all(CachingCpuAllocator& allocator, std::vector<c10::DataPtr>& held) {
  std::set<void*> addresses;
  for (size_t size : k_sizes) {
    held.push_back(allocator.allocate(size));
    addresses.insert(held.back().get());
  }
  return addresses;
}

TEST(CachingCpuAllocatorTest, BlockSizesRoundToSixtyFourBytesThenToPages) {
  EXPECT_EQ(CachingCpuAllocator::block_size(0), 0u);
  EXPECT_EQ(CachingCpuAllocator::block_size(1), 64u);
  EXPECT_EQ(CachingCpuAllocator::block_size(64), 64u);
  EXPECT_EQ(CachingCpuAllocator::block_size(65), 128u);
  EXPECT_EQ(CachingCpuAllocator::block_size(4095), 4096u);
  EXPECT_EQ(CachingCpuAllocator::block_size(4096), 4096u);
  EXPECT_EQ(CachingCpuAllocator::block_size(4097), 8192u);
  EXPECT_EQ(CachingCpuAllocator::block_size(16 << 20), size_t(16 << 20));
}

// After one warm-up, the same sizes come back as the same blocks and nothing new is taken from the system.
TEST(CachingCpuAllocatorTest, SteadyStateReusesTheSameBlocks) {
  CachingCpuAllocator allocator;
  std::vector<c10::DataPtr> held;
  std::set<void*> first = allocate_all(allocator, held);
  EXPECT_EQ(allocator.stats().system_allocations, std::size(k_sizes));
  held.clear();
  EXPECT_EQ(allocator.stats().live_blocks, 0u);
  EXPECT_EQ(allocator.stats().cached_blocks, std::size(k_sizes));
  for (int call = 0; call < 5; ++call) {
    EXPECT_EQ(allocate_all(allocator, held), first) << "call " << call;
    EXPECT_EQ(allocator.stats().cached_blocks, 0u);
    held.clear();
  }
  EXPECT_EQ(allocator.stats().system_allocations, std::size(k_sizes));
  // A size not asked for before takes a new block; a freed block serves only its own size.
  c10::DataPtr other = allocator.allocate(5000);
  EXPECT_EQ(first.count(other.get()), 0u);
  EXPECT_EQ(allocator.stats().system_allocations, std::size(k_sizes) + 1);
}

TEST(CachingCpuAllocatorTest, BlocksAreSixtyFourByteAligned) {
  CachingCpuAllocator allocator;
  std::vector<c10::DataPtr> held;
  for (size_t size : {size_t(1), size_t(63), size_t(65), size_t(4095), size_t(4097), size_t((1 << 20) + 3)}) {
    for (int i = 0; i < 3; ++i) {
      held.push_back(allocator.allocate(size));
      EXPECT_EQ(reinterpret_cast<uintptr_t>(held.back().get()) % 64, 0u) << size;
      EXPECT_EQ(held.back().device(), c10::Device(c10::DeviceType::CPU));
    }
  }
  EXPECT_EQ(allocator.allocate(0).get(), nullptr);
}

TEST(CachingCpuAllocatorTest, EmptyCacheReturnsCachedBlocksOnly) {
  CachingCpuAllocator allocator;
  c10::DataPtr kept = allocator.allocate(8192);
  allocator.allocate(8192);  // freed at once
  EXPECT_EQ(allocator.stats().cached_bytes, 8192u);
  allocator.empty_cache();
  CachingCpuAllocator::Stats stats = allocator.stats();
  EXPECT_EQ(stats.cached_blocks, 0u);
  EXPECT_EQ(stats.cached_bytes, 0u);
  EXPECT_EQ(stats.live_bytes, 8192u);
  allocator.allocate(8192);
  EXPECT_EQ(allocator.stats().system_allocations, 3u);
}

TEST(CachingCpuAllocatorTest, RawAllocateAndDeallocateRoundTrip) {
  CachingCpuAllocator allocator;
  void* data = allocator.raw_allocate(100000);
  ASSERT_NE(data, nullptr);
  std::memset(data, 1, 100000);
  allocator.raw_deallocate(data);
  EXPECT_EQ(allocator.stats().cached_blocks, 1u);
  void* again = allocator.raw_allocate(100000);
  EXPECT_EQ(again, data);
  allocator.raw_deallocate(again);
}

// A tensor that outlives its allocator gives its block back to the system instead of to a dead free list.
TEST(CachingCpuAllocatorTest, BlocksMayOutliveTheAllocator) {
  auto allocator = std::make_unique<CachingCpuAllocator>();
  c10::DataPtr survivor = allocator->allocate(4096);
  allocator->allocate(4096);
  allocator.reset();
  std::memset(survivor.get(), 0, 4096);
  survivor.clear();
}

// Threads allocating and freeing at once never share a live block, and every block is accounted for after.
TEST(CachingCpuAllocatorTest, ConcurrentAllocateAndFreeIsSafe) {
  CachingCpuAllocator allocator;
  constexpr int k_threads = 8, k_iterations = 3000;
  const size_t sizes[] = {64, 4096, 40000, 1 << 20};
  std::vector<int> failures(k_threads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < k_threads; ++t) {
    threads.emplace_back([&, t] {
      std::vector<c10::DataPtr> held;
      for (int i = 0; i < k_iterations; ++i) {
        size_t size = sizes[(i + t) % std::size(sizes)];
        c10::DataPtr block = allocator.allocate(size);
        auto* bytes = static_cast<unsigned char*>(block.get());
        std::memset(bytes, t + 1, 64);
        std::memset(bytes + size - 64, t + 1, 64);
        std::this_thread::yield();
        if (bytes[0] != t + 1 || bytes[size - 1] != t + 1) ++failures[t];
        held.push_back(std::move(block));
        if (held.size() > 4) held.erase(held.begin());  // frees in another order than it allocates
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (int t = 0; t < k_threads; ++t) EXPECT_EQ(failures[t], 0) << "thread " << t << " saw its block overwritten";
  CachingCpuAllocator::Stats stats = allocator.stats();
  EXPECT_EQ(stats.live_blocks, 0u);
  EXPECT_EQ(stats.cached_blocks, stats.system_allocations);
  // A thread holds at most two blocks of one size at once (five consecutive of four sizes), so without reuse across
  // calls and threads there would be thousands.
  EXPECT_LE(stats.system_allocations, size_t(k_threads * 2) * std::size(sizes));
}

// Installed, it serves ATen's CPU tensors: a repeated op takes no new memory after its first call.
TEST(CachingCpuAllocatorTest, InstalledItServesAtenAndReusesOutputs) {
  CachingCpuAllocator* allocator = install_caching_cpu_allocator();
  ASSERT_NE(allocator, nullptr);
  EXPECT_EQ(install_caching_cpu_allocator(), allocator);
  EXPECT_EQ(installed_caching_cpu_allocator(), allocator);
  EXPECT_EQ(c10::GetCPUAllocator(), allocator);
  EXPECT_EQ(ca_install_cpu_caching_allocator(), 0);
  at::Tensor x = at::rand({1024, 4096});
  size_t live = ca_cpu_caching_allocator_live_bytes();
  EXPECT_GE(live, size_t(16 << 20));
  { at::Tensor warm = at::relu(x); }
  size_t taken = allocator->stats().system_allocations;
  for (int call = 0; call < 5; ++call) {
    at::Tensor y = at::relu(x);
    EXPECT_EQ(ca_cpu_caching_allocator_live_bytes(), live + size_t(16 << 20));
  }
  EXPECT_EQ(allocator->stats().system_allocations, taken);
}

}  // namespace
}  // namespace ca
