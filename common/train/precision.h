// The arithmetic precision of a ca-train run (--dtype): float32, or bfloat16 autocast over float32 weights, the
// mixed precision of torch.autocast: matrix products and attention in bfloat16, the weights, their gradients,
// AdamW's moments, norms, softmax and the losses in float32 (so checkpoints and resumes are those of float32).
#pragma once

#include <expected>
#include <string>

namespace ca::train {

/// Sets the calling thread's precision for models on `device` ("cpu", "cuda", "cuda:N") to `dtype` ("float32" or
/// "bfloat16"). bfloat16 turns on ATen's autocast for the device type without its weight-cast cache (a cache would
/// keep casts of weights from before an optimizer update). Errors: another dtype, a bad device string.
std::expected<void, std::string> set_compute_dtype(const std::string& device, const std::string& dtype);

}  // namespace ca::train
