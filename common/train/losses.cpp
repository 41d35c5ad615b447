// The losses and estimators of ca-train; docs/TRAINING.md states the same equations.
#include "train/losses.h"

#include <limits>

namespace ca::train {

at::Tensor masked_mean(const at::Tensor& x, const at::Tensor& mask) {
  const at::Tensor m = mask.to(x.scalar_type());
  return (x * m).sum() / m.sum().clamp_min(1.0);
}

namespace {

// Shifts [B, T-1] to [B, T] with a zero first column, so that position t holds what predicted token t.
at::Tensor shift_right(const at::Tensor& x) {
  return at::cat({at::zeros({x.size(0), 1}, x.options()), x}, 1);
}

at::Tensor predicting_log_softmax(const at::Tensor& logits) {
  const at::Tensor l = logits.scalar_type() == at::kDouble ? logits : logits.to(at::kFloat);
  return at::log_softmax(l.slice(1, 0, logits.size(1) - 1), -1);
}

}  // namespace

at::Tensor token_logprobs(const at::Tensor& logits, const at::Tensor& ids) {
  const at::Tensor lp = predicting_log_softmax(logits);
  return shift_right(lp.gather(-1, ids.slice(1, 1).unsqueeze(-1)).squeeze(-1));
}

at::Tensor token_entropy(const at::Tensor& logits) {
  const at::Tensor lp = predicting_log_softmax(logits);
  return shift_right(-(lp.exp() * lp).sum(-1));
}

at::Tensor masked_nll(const at::Tensor& logprobs, const at::Tensor& mask) {
  return -masked_mean(logprobs, mask);
}

namespace {

// One backward GAE pass with one lambda; steps off the mask carry the next action token's value and advantage.
at::Tensor gae_pass(const at::Tensor& rewards, const at::Tensor& values, const at::Tensor& mask, double gamma,
                    double lambda) {
  const at::Tensor on = mask.to(at::kBool);
  at::Tensor next_value = at::zeros({rewards.size(0)}, values.options());
  at::Tensor next_adv = at::zeros_like(next_value);
  at::Tensor adv = at::zeros_like(values);
  for (int64_t t = rewards.size(1) - 1; t >= 0; --t) {
    const at::Tensor m = on.select(1, t);
    const at::Tensor v = values.select(1, t);
    const at::Tensor a = rewards.select(1, t) + gamma * next_value - v + gamma * lambda * next_adv;
    adv.select(1, t).copy_(at::where(m, a, at::zeros_like(a)));
    next_value = at::where(m, v, next_value);
    next_adv = at::where(m, a, next_adv);
  }
  return adv;
}

}  // namespace

Gae gae(const at::Tensor& rewards, const at::Tensor& values, const at::Tensor& mask, const GaeParams& params) {
  const at::Tensor v = values.detach();
  const at::Tensor m = mask.to(v.scalar_type());
  Gae out;
  out.advantages = gae_pass(rewards, v, mask, params.gamma, params.lambda_actor);
  out.returns = (gae_pass(rewards, v, mask, params.gamma, params.lambda_critic) + v) * m;
  return out;
}

at::Tensor whiten(const at::Tensor& x, const at::Tensor& mask) {
  const at::Tensor m = mask.to(x.scalar_type());
  const at::Tensor mean = masked_mean(x, m);
  const at::Tensor var = masked_mean((x - mean).square(), m);
  return (x - mean) * at::rsqrt(var + 1e-8) * m;
}

at::Tensor group_advantages(const at::Tensor& rewards) {
  const at::Tensor mean = rewards.mean(1, true);
  const at::Tensor std = rewards.size(1) > 1 ? rewards.std(1, /*unbiased=*/true, true) : at::zeros_like(mean);
  return (rewards - mean) / (std + 1e-6);
}

PpoLoss ppo_policy_loss(const at::Tensor& logprobs, const at::Tensor& old_logprobs, const at::Tensor& advantages,
                        const at::Tensor& mask, const PpoParams& params) {
  const at::Tensor ratio = at::exp(logprobs - old_logprobs);
  const at::Tensor unclipped = -advantages * ratio;
  const at::Tensor clipped = -advantages * at::clamp(ratio, 1.0 - params.eps_low, 1.0 + params.eps_high);
  at::Tensor loss = at::maximum(unclipped, clipped);
  if (params.dual_clip > 1.0) {
    loss = at::where(advantages < 0, at::minimum(loss, -params.dual_clip * advantages), loss);
  }
  PpoLoss out;
  out.loss = masked_mean(loss, mask);
  out.clip_fraction = masked_mean((clipped > unclipped).to(ratio.scalar_type()), mask).detach();
  out.ratio_mean = masked_mean(ratio, mask).detach();
  return out;
}

at::Tensor value_loss(const at::Tensor& values, const at::Tensor& old_values, const at::Tensor& returns,
                      const at::Tensor& mask, double clip) {
  const at::Tensor plain = (values - returns).square();
  if (clip <= 0) {
    return 0.5 * masked_mean(plain, mask);
  }
  const at::Tensor clipped_values = old_values + at::clamp(values - old_values, -clip, clip);
  return 0.5 * masked_mean(at::maximum(plain, (clipped_values - returns).square()), mask);
}

at::Tensor kl_k3(const at::Tensor& logprobs, const at::Tensor& ref_logprobs) {
  const at::Tensor log_ratio = ref_logprobs - logprobs;
  return at::exp(log_ratio) - log_ratio - 1.0;
}

double explained_variance(const at::Tensor& values, const at::Tensor& returns, const at::Tensor& mask) {
  const at::Tensor v = values.detach().to(at::kDouble);
  const at::Tensor r = returns.detach().to(at::kDouble);
  const at::Tensor m = mask.to(at::kDouble);
  auto var = [&](const at::Tensor& x) { return masked_mean((x - masked_mean(x, m)).square(), m).item<double>(); };
  const double var_r = var(r);
  if (var_r == 0) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  return 1.0 - var(r - v) / var_r;
}

void VarianceSums::add(const at::Tensor& values, const at::Tensor& returns, const at::Tensor& mask) {
  const at::Tensor m = mask.detach().to(at::kDouble);
  const at::Tensor v = values.detach().to(at::kDouble) * m;
  const at::Tensor r = returns.detach().to(at::kDouble) * m;
  const at::Tensor d = r - v;
  const at::Tensor parts = at::stack({m.sum(), r.sum(), r.square().sum(), d.sum(), d.square().sum(), v.sum()}).cpu();
  for (size_t k = 0; k < sums.size(); ++k) {
    sums[k] += parts[static_cast<int64_t>(k)].item<double>();
  }
}

double VarianceSums::explained_variance() const {
  const double n = sums[0];
  if (n <= 0) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  const double mean_r = sums[1] / n, mean_d = sums[3] / n;
  const double var_r = sums[2] / n - mean_r * mean_r, var_d = sums[4] / n - mean_d * mean_d;
  if (var_r <= 1e-12 * (sums[2] / n)) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  return 1.0 - var_d / var_r;
}

}  // namespace ca::train
