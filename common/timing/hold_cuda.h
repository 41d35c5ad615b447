// The hold before a timed call (clock.h): a kernel that fills every SM for a fixed time, queued ahead of the call's
// start event. The host launches the call meanwhile, so the device clock starts with the call's work already queued
// and counts none of the launch (nvbench's blocking kernel, but timed rather than released by the host, so a call
// that waits for the device inside cannot deadlock with it). Filling every SM keeps work the call puts on other
// streams from starting before the start event either. Only in builds with the CUDA toolkit (CA_WITH_CUDA).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace ca {

/// Queues the hold on `stream` for `nanoseconds` of the device's global timer, as many threads as `sms`
/// multiprocessors of `threads_per_sm` resident threads each can hold. A launch that fails (a lost context) leaves
/// the error for the call that follows, which fails with it.
void hold_device(cudaStream_t stream, uint32_t nanoseconds, int sms, int threads_per_sm);

}  // namespace ca
