#include "util/slices.h"

#include <algorithm>
#include <system_error>
#include <thread>
#include <vector>

namespace ca {

uint64_t slice_count(uint64_t items, uint64_t items_per_slice) {
  constexpr uint64_t k_max_slices = 16;
  return std::min<uint64_t>(
      {std::max(1u, std::thread::hardware_concurrency()), k_max_slices, items / items_per_slice + 1});
}

void run_slices(uint64_t slices, const std::function<void(uint64_t)>& run) {
  std::vector<std::thread> workers;
  for (uint64_t slice = 1; slice < slices; ++slice) {
    try {
      workers.emplace_back(run, slice);
    } catch (const std::system_error&) {
      run(slice);
    }
  }
  if (slices > 0) run(0);
  for (auto& worker : workers) worker.join();
}

}  // namespace ca
