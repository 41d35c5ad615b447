// AdamW, gradient clipping and the optimizer state file.
#include "train/optimizer.h"

#include <cmath>
#include <cstring>
#include <vector>

#include <ATen/core/grad_mode.h>

#include "ir/safetensors.h"

namespace ca::train {

AdamW::AdamW(std::map<std::string, at::Tensor> params, AdamWOptions options)
    : m_params(std::move(params)), m_options(options) {
  for (const auto& [name, p] : m_params) {
    m_exp_avg[name] = at::zeros_like(p, at::MemoryFormat::Contiguous);
    m_exp_avg_sq[name] = at::zeros_like(p, at::MemoryFormat::Contiguous);
  }
}

void AdamW::step(double lr) {
  at::NoGradGuard no_grad;
  ++m_step;
  const double bias1 = 1.0 - std::pow(m_options.beta1, static_cast<double>(m_step));
  const double bias2 = 1.0 - std::pow(m_options.beta2, static_cast<double>(m_step));
  // The same arithmetic as one tensor at a time, in multi-tensor kernels (a few launches for all the parameters on
  // a GPU instead of several each).
  std::vector<at::Tensor> p, g, m, v;
  for (auto& [name, param] : m_params) {
    if (!param.grad().defined()) {
      continue;
    }
    p.push_back(param);
    g.push_back(param.grad());
    m.push_back(m_exp_avg[name]);
    v.push_back(m_exp_avg_sq[name]);
  }
  if (p.empty()) {
    return;
  }
  at::_foreach_mul_(m, m_options.beta1);
  at::_foreach_add_(m, g, 1.0 - m_options.beta1);
  at::_foreach_mul_(v, m_options.beta2);
  at::_foreach_addcmul_(v, g, g, 1.0 - m_options.beta2);
  if (m_options.weight_decay != 0) {
    at::_foreach_mul_(p, 1.0 - lr * m_options.weight_decay);
  }
  std::vector<at::Tensor> denom = at::_foreach_div(v, bias2);
  at::_foreach_sqrt_(denom);
  at::_foreach_add_(denom, m_options.eps);
  at::_foreach_addcdiv_(p, m, denom, -lr / bias1);
}

void AdamW::zero_grad() {
  for (auto& [name, p] : m_params) {
    if (p.grad().defined()) {
      p.mutable_grad().zero_();
    }
  }
}

std::expected<void, std::string> AdamW::save(const std::filesystem::path& path) const {
  std::vector<SafetensorsTensor> tensors;
  std::vector<at::Tensor> keep;  // CPU copies the spans point into (the state may live on a GPU)
  keep.reserve(2 * m_exp_avg.size());
  for (const auto* state : {&m_exp_avg, &m_exp_avg_sq}) {
    const std::string prefix = state == &m_exp_avg ? "exp_avg." : "exp_avg_sq.";
    for (const auto& [name, t] : *state) {
      const at::Tensor& cpu = keep.emplace_back(t.to(at::kCPU).contiguous());
      tensors.push_back({prefix + name, DType::float32, cpu.sizes().vec(),
                         std::span(static_cast<const uint8_t*>(cpu.data_ptr()), cpu.numel() * cpu.element_size())});
    }
  }
  return write_safetensors(path.string(), tensors);
}

std::expected<void, std::string> AdamW::load(const std::filesystem::path& path, int64_t steps) {
  for (auto* state : {&m_exp_avg, &m_exp_avg_sq}) {
    const std::string prefix = state == &m_exp_avg ? "exp_avg." : "exp_avg_sq.";
    for (auto& [name, t] : *state) {
      auto bytes = read_safetensors_tensor(path.string(), prefix + name, DType::float32, t.sizes().vec());
      if (!bytes) {
        return std::unexpected(bytes.error());
      }
      at::Tensor cpu = at::empty(t.sizes(), at::kFloat);
      std::memcpy(cpu.data_ptr(), bytes->data(), bytes->size());
      t.copy_(cpu);
    }
  }
  m_step = steps;
  return {};
}

double clip_grad_norm(const std::map<std::string, at::Tensor>& params, double max_norm) {
  at::NoGradGuard no_grad;
  // The squares summed in float64 on the parameters' device, in the parameters' order, and read once (one wait for
  // the device, not one a parameter).
  at::Tensor total;
  std::vector<at::Tensor> grads;
  for (const auto& [name, p] : params) {
    if (p.grad().defined()) {
      const at::Tensor s = p.grad().to(at::kDouble).square().sum();
      total = total.defined() ? total + s : s;
      grads.push_back(p.grad());
    }
  }
  const double norm = total.defined() ? std::sqrt(total.item<double>()) : 0.0;
  if (max_norm > 0 && norm > max_norm) {
    at::_foreach_mul_(grads, max_norm / (norm + 1e-6));
  }
  return norm;
}

}  // namespace ca::train
