// --dtype: ATen's autocast, set for the thread that runs the training loop.
#include "train/precision.h"

#include <ATen/autocast_mode.h>
#include <c10/core/Device.h>

#include <optional>

namespace ca::train {

std::expected<void, std::string> set_compute_dtype(const std::string& device, const std::string& dtype) {
  if (dtype != "float32" && dtype != "bfloat16") {
    return std::unexpected("dtype '" + dtype + "': float32 or bfloat16");
  }
  std::optional<c10::Device> dev;
  try {  // LibTorch reports a bad device string by exception; it stops here
    dev = c10::Device(device);
  } catch (const std::exception&) {
    return std::unexpected("device '" + device + "' is not a device (cpu, cuda, cuda:N)");
  }
  const bool on = dtype == "bfloat16";
  at::autocast::set_autocast_enabled(dev->type(), on);
  if (on) {
    at::autocast::set_autocast_dtype(dev->type(), at::kBFloat16);
    at::autocast::set_autocast_cache_enabled(false);
  }
  return {};
}

}  // namespace ca::train
