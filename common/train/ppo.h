// PPO over trajectories (ca-train ppo) and single-turn warm-up with group-normalized advantages (ca-train
// warmup): one iteration recomputes old log-probabilities and values, computes advantages and runs PPO epochs of
// minibatch updates of the actor (and the critic). The tool and the tests share ppo_iteration.
#pragma once

#include <cstdint>
#include <expected>
#include <functional>
#include <string>
#include <vector>

#include "model/transformer.h"
#include "train/losses.h"
#include "train/sequence.h"
#include "train/trainer.h"
#include "train/value.h"

namespace ca::train {

struct PpoConfig {
  PpoParams clip;                 // eps_low 0.2, eps_high 0.28 (clip-higher), dual clip 3
  GaeParams gae;                  // gamma 1, lambda_actor 0.95, lambda_critic 1.0
  double value_clip = 0.2;        // value clipping around the old values; <= 0: none
  double kl_coef = 0.0;           // weight of the token-mean k3 KL to the reference in the actor's loss
  int64_t epochs = 1;             // passes over the iteration's sequences
  int64_t minibatches = 1;        // optimizer updates per pass (the sequences shuffled and split)
  int64_t micro_batch = 2;        // sequences per forward/backward
  bool group_advantages = false;  // warm-up: A = group_advantages over each task's sequences, no critic
};

/// The models of an iteration. `critic` and `critic_optimized` are null in group mode; `reference` is null for no
/// KL. The actor's and critic's weights are those `actor_optimized` and `critic_optimized` update, in place.
struct PpoModels {
  const model::Transformer* actor = nullptr;
  Optimized* actor_optimized = nullptr;
  const Critic* critic = nullptr;
  Optimized* critic_optimized = nullptr;
  const model::Transformer* reference = nullptr;
};

/// Rewards of a batch as the step log shows them: their mean, the share > 0 (pass rate: the paper's reward is
/// positive exactly for a correct kernel), and a histogram {"value": count} when there are at most 16 distinct
/// values, else 10 equal bins {"lo..hi": count} from the minimum to the maximum.
Json reward_stats(const std::vector<double>& rewards);

/// One PPO iteration on the sequences `which` of `data`:
///  1. a forward pass without gradients gives the old log-probabilities ℓ_old (and old values V_old, and the
///     reference's ℓ_ref when kl_coef > 0);
///  2. advantages: GAE over action tokens with lambda_actor, whitened over the iteration's action tokens, and
///     returns with lambda_critic (the critic's targets); in group mode each sequence's advantage is its reward
///     normalized among the iteration's sequences of its task_id (group_advantages) on all its action tokens;
///  3. `epochs` passes, each over the sequences shuffled (from `seed` and the pass) into `minibatches` parts, one
///     optimizer update of the actor (and the critic) per part: actor loss = ppo_policy_loss + kl_coef · token
///     mean of kl_k3, critic loss = value_loss with value_clip, each a token mean over the part's action tokens
///     (micro-batches accumulate their share).
/// Returns the step log's fields: rewards (reward_stats), policy_loss, value_loss, kl, entropy, clip_fraction,
/// ratio_mean (means over the updates), explained_variance (old values against returns), advantage_mean (before
/// whitening), grad_norm and lr of the actor (mean over updates), critic_grad_norm, updates, tokens, action_tokens.
/// With `dp` (a data-parallel group; every rank passes the same global `which`): each rank runs step 1's forward
/// passes on its shard_indices of the iteration and the rows are summed into every rank, so that step 2 sees the
/// whole iteration (whitening and explained variance over all ranks' action tokens); in step 3 each rank trains on
/// its shard of every minibatch, the token means normalized by the whole minibatch's action tokens, the gradients
/// summed in Optimized::update; the log fields are summed over ranks.
/// Errors: an empty `which`, a failed collective.
std::expected<Json, std::string> ppo_iteration(const PpoModels& models, const std::vector<Sequence>& data,
                                               const std::vector<size_t>& which, const PpoConfig& config, uint64_t seed,
                                               at::Device device = at::kCPU, const DataParallel* dp = nullptr);

struct PpoRunOptions {
  std::filesystem::path critic;     // the critic checkpoint (ca-train value's); empty in group mode
  std::filesystem::path reference;  // the KL reference; empty: options.model (the starting actor)
  double critic_lr = 1e-5;
  PpoConfig config;
};

/// The ppo (and, with config.group_advantages, warmup) stage in Trainer's loop: each step is one ppo_iteration
/// over options.batch sequences (in group mode: options.batch tasks, all their sequences). Checkpoints hold the
/// actor at the top and the critic in critic/ (each with its optimizer state); --resume continues from them.
std::expected<TrainResult, std::string> train_ppo(const TrainOptions& options, const PpoRunOptions& ppo,
                                                  const std::vector<Sequence>& data,
                                                  const std::function<void(const Json&)>& on_step);

}  // namespace ca::train
