// The runtime estimate that sizes synthesized tasks: bytes moved and FLOPs of
// each node, from its shapes, over a device's bandwidth and peak (a roofline
// per node, plus a fixed launch cost). ca-filter measures the real time; this
// only has to land near the window.
#pragma once

#include <cstdint>
#include <expected>
#include <map>
#include <string>
#include <vector>

#include "ir/program.h"

namespace ca {

struct DeviceModel {
  std::string name;
  double bytes_per_s = 0;
  double flops_per_s = 0;
  double launch_s = 0;  // per node: eager launches one kernel (or more) per op
};

/// "h200": 4.8 TB/s, 60 TFLOP/s fp32, 5 us a node; "cpu": 20 GB/s,
/// 100 GFLOP/s, 2 us a node (stated, not measured). Errors name the known ones.
std::expected<DeviceModel, std::string> device_model(std::string_view name);

/// Shape and element size of one value of a program.
struct ValueInfo {
  std::vector<int64_t> shape;
  int64_t element_bytes = 4;
  int64_t numel() const;
};

struct Cost {
  double flops = 0;
  double bytes = 0;
  double ms = 0;
};

/// Sums over nodes: bytes = every tensor argument read plus the outputs
/// written; FLOPs = 2*out*K for `matmul` nodes (K: the last dim of the first
/// tensor argument of rank >= 2), 2*out*(weight numel / weight dim 0) for
/// `convolution` nodes (the weight: the second tensor argument), else the
/// larger of elements read and written. Time per node = max(bytes/bandwidth,
/// FLOPs/peak) + launch. `categories[i]` is node i's op category; a value
/// missing from `values` counts as empty.
Cost estimate_cost(const Program& program, const std::map<std::string, ValueInfo>& values,
                   const std::vector<std::string>& categories, const DeviceModel& device);

}  // namespace ca
