// The speed-of-light floor of a task (docs/EXPLOITS.md, C10): no correct candidate can run faster than the bytes it
// must move over the device's peak memory bandwidth. A time below it was not measured honestly and is rejected, so one
// near-zero time cannot ruin a geometric mean.
#pragma once

#include <cstddef>
#include <expected>
#include <string>

#include "ir/backend.h"

namespace ca {

/// Peak memory bandwidth in bytes per second. cuda: 2 x memory clock x bus width of device `device_index`
/// (double data rate); cpu: 1e12, above any CPU socket's DRAM bandwidth today, so only impossible times fall below.
std::expected<double, std::string> peak_bandwidth(Backend backend, int device_index);

/// What a profile names its device by: "cuda:0 NVIDIA H200" or "cpu <model name>".
std::string device_description(Backend backend, int device_index);

/// Microseconds to move `bytes` at `bytes_per_s`.
inline double floor_us(size_t bytes, double bytes_per_s) {
  return double(bytes) / bytes_per_s * 1e6;
}

}  // namespace ca
