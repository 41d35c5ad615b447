// AdamW over named float32 tensors (torch.optim.AdamW's update, decoupled weight decay), global-norm gradient
// clipping, and the optimizer state as a safetensors file so that a resumed run continues bit for bit.
#pragma once

#include <ATen/ATen.h>

#include <expected>
#include <filesystem>
#include <map>
#include <string>

namespace ca::train {

struct AdamWOptions {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
};

class AdamW {
 public:
  /// Keeps (shares) `params`, which must be float32 leaves with requires_grad set by the caller.
  AdamW(std::map<std::string, at::Tensor> params, AdamWOptions options);

  /// One update with learning rate `lr` from the parameters' .grad() (a parameter without one is skipped):
  /// m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2; p = p (1 - lr wd) - lr (m / (1-b1^t)) / (sqrt(v / (1-b2^t)) + eps).
  void step(double lr);
  /// Sets every gradient to zero.
  void zero_grad();
  int64_t steps() const { return m_step; }

  /// Writes exp_avg.NAME and exp_avg_sq.NAME to `path` (atomically); the step count is the caller's to keep.
  std::expected<void, std::string> save(const std::filesystem::path& path) const;
  /// Reads what save wrote; `steps` is the update count to continue from. Errors name the file and tensor.
  std::expected<void, std::string> load(const std::filesystem::path& path, int64_t steps);

 private:
  std::map<std::string, at::Tensor> m_params, m_exp_avg, m_exp_avg_sq;
  AdamWOptions m_options;
  int64_t m_step = 0;
};

/// Scales all gradients of `params` so that their global L2 norm is at most `max_norm` (<= 0: no clipping), as
/// torch.nn.utils.clip_grad_norm_ does (factor max_norm / (norm + 1e-6)). Returns the norm before clipping.
double clip_grad_norm(const std::map<std::string, at::Tensor>& params, double max_norm);

}  // namespace ca::train
