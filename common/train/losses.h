// The losses and estimators of ca-train (docs/TRAINING.md gives the equations) as pure functions over tensors
// [batch, tokens] with a mask (1 on action tokens: those the model produced, 0 on prompt, tool results, padding).
// Every "token mean" divides by the number of action tokens in the whole batch, not per sequence.
#pragma once

#include <ATen/ATen.h>

#include <vector>

namespace ca::train {

/// Sum of x * mask over all entries divided by sum(mask) (0 when the mask is empty).
at::Tensor masked_mean(const at::Tensor& x, const at::Tensor& mask);

/// Log-probability of each token given the tokens before it: out[b, t] = log_softmax(logits[b, t-1])[ids[b, t]],
/// out[b, 0] = 0. `logits` [B, T, V] (computed in float32 at least), `ids` [B, T] int64. Result [B, T].
at::Tensor token_logprobs(const at::Tensor& logits, const at::Tensor& ids);

/// Entropy of the distribution that predicted each token (aligned as token_logprobs; out[b, 0] = 0). [B, T].
at::Tensor token_entropy(const at::Tensor& logits);

/// RFT's loss: the token mean of -logprob over masked tokens.
at::Tensor masked_nll(const at::Tensor& logprobs, const at::Tensor& mask);

struct Gae {
  at::Tensor advantages;  // GAE with the actor's lambda, 0 off the mask
  at::Tensor returns;     // GAE with the critic's lambda, plus the values (the critic's target), 0 off the mask
};

struct GaeParams {
  double gamma = 1.0;
  double lambda_actor = 0.95;
  double lambda_critic = 1.0;
};

/// Generalized advantage estimation over the action tokens of each row, in order, skipping tokens off the mask
/// (a tool result is no step of the policy): delta_t = r_t + gamma V_next - V_t with V_next = 0 after the last
/// action token; A_t = delta_t + gamma lambda A_next. `rewards`, `values`, `mask` [B, T].
Gae gae(const at::Tensor& rewards, const at::Tensor& values, const at::Tensor& mask, const GaeParams& params = {});

/// (x - mean) / sqrt(var + 1e-8) with mean and (biased) variance over the masked entries of the whole batch;
/// 0 off the mask.
at::Tensor whiten(const at::Tensor& x, const at::Tensor& mask);

/// Group-normalized advantages for K samples of each prompt: `rewards` [G, K] -> (r - mean_g) / (std_g + 1e-6),
/// std unbiased (as torch.std); a group of equal rewards gets 0.
at::Tensor group_advantages(const at::Tensor& rewards);

struct PpoParams {
  double eps_low = 0.2;    // ratio floor 1 - eps_low
  double eps_high = 0.28;  // ratio ceiling 1 + eps_high (clip-higher)
  double dual_clip = 3.0;  // c: for A < 0 the loss is at most -c A; <= 1 turns dual clip off
};

struct PpoLoss {
  at::Tensor loss;           // scalar, differentiable in logprobs
  at::Tensor clip_fraction;  // share of action tokens where the clipped term was taken
  at::Tensor ratio_mean;     // token mean of exp(logprobs - old_logprobs)
};

/// The clipped policy loss with clip-higher and dual clip, token mean over the mask:
/// l = max(-A r, -A clip(r, 1-eps_low, 1+eps_high)); for A < 0, l = min(l, -c A).
PpoLoss ppo_policy_loss(const at::Tensor& logprobs, const at::Tensor& old_logprobs, const at::Tensor& advantages,
                        const at::Tensor& mask, const PpoParams& params = {});

/// The clipped value loss, token mean: 0.5 max((V - R)^2, (V_old + clip(V - V_old, -c, c) - R)^2); `clip` <= 0 turns
/// clipping off (0.5 (V - R)^2).
at::Tensor value_loss(const at::Tensor& values, const at::Tensor& old_values, const at::Tensor& returns,
                      const at::Tensor& mask, double clip = 0.2);

/// The k3 estimator of KL(policy || reference) per token: exp(ref - lp) - (ref - lp) - 1 (>= 0). [B, T].
at::Tensor kl_k3(const at::Tensor& logprobs, const at::Tensor& ref_logprobs);

/// 1 - Var(R - V) / Var(R) over the masked entries (biased variances); NaN when Var(R) is 0.
double explained_variance(const at::Tensor& values, const at::Tensor& returns, const at::Tensor& mask);

/// explained_variance from sums, so that the shares of a batch on several ranks can be added before the ratio:
/// over the masked entries the count, sum R, sum R^2, sum D, sum D^2 (D = R - V) and sum V, in float64.
struct VarianceSums {
  std::vector<double> sums = std::vector<double>(6, 0.0);
  void add(const at::Tensor& values, const at::Tensor& returns, const at::Tensor& mask);
  /// 1 - Var(D) / Var(R) (biased variances, E[x^2] - E[x]^2); NaN when Var(R) is 0 (to 1e-12 of E[R^2]) or there
  /// are no entries.
  double explained_variance() const;
  double value_mean() const { return sums[0] > 0 ? sums[5] / sums[0] : 0.0; }
  double return_mean() const { return sums[0] > 0 ? sums[1] / sums[0] : 0.0; }
};

}  // namespace ca::train
