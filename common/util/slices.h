// Work split into slices on threads, for the host-side loops over large buffers (drawing a tensor, digesting one).
#pragma once

#include <cstdint>
#include <functional>

namespace ca {

/// How many slices `items` split into: one per `items_per_slice` (below that a thread costs more than it saves),
/// at most the cores and at most 16.
uint64_t slice_count(uint64_t items, uint64_t items_per_slice);

/// Runs run(slice) for every slice in [0, slices): slice 0 on this thread, the others on threads of their own, or
/// here too when no thread can be had (a sandbox's process limit). Returns when all are done.
void run_slices(uint64_t slices, const std::function<void(uint64_t)>& run);

}  // namespace ca
