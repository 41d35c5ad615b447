// The critic (a backbone with a linear value head) and value pretraining (ca-train value): the critic fitted to
// the Monte-Carlo returns of trajectories while the actor stays as it is.
#pragma once

#include <expected>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "model/transformer.h"
#include "train/sequence.h"
#include "train/trainer.h"

namespace ca::train {

/// Critic = backbone + value head: V = score.weight · h, h the backbone's final hidden state (after its last
/// norm). The head is the backbone's weight `score.weight` [1, hidden], the name and shape of Hugging Face's
/// *ForTokenClassification with num_labels 1 (and of TRL's reward and value models), so a saved critic is a
/// checkpoint transformers loads as AutoModelForTokenClassification.
class Critic {
 public:
  /// Loads a critic checkpoint, or a policy checkpoint (no score.weight), which gets a zero head: V = 0 everywhere,
  /// explained variance 0 before training. Errors: what Transformer::load says.
  static std::expected<Critic, std::string> load(const std::filesystem::path& dir, at::Device device);
  /// The critic over `backbone` (its weights shared); a zero head unless the backbone holds score.weight.
  static std::expected<Critic, std::string> from_backbone(const model::Transformer& backbone);

  /// V[b, t]: the value of the state before token t (the hidden state at t-1, which chose token t: the alignment
  /// of token_logprobs), 0 at t = 0. [batch, tokens], float32, differentiable in the weights.
  at::Tensor values(const Batch& batch) const;

  /// Every trainable weight (the backbone's, score.weight among them).
  const std::map<std::string, at::Tensor>& weights() const { return m_model.weights(); }
  /// Writes the critic as a Hugging Face token-classification checkpoint (config.json with num_labels 1 and
  /// *ForTokenClassification as architecture; model.safetensors with score.weight).
  std::expected<void, std::string> save(const std::filesystem::path& dir) const { return m_model.save(dir); }

 private:
  explicit Critic(model::Transformer m) : m_model(std::move(m)) {}
  model::Transformer m_model;
};

/// Explained variance of `critic` over all of `data` (no gradients; micro-batches of options.micro_batch; with
/// options.dp each rank takes its shard and the sums are added over ranks) against the Monte-Carlo returns (every
/// action token's return is its trajectory's reward). Errors: a failed collective.
std::expected<double, std::string> critic_explained_variance(const Critic& critic, const std::vector<Sequence>& data,
                                                             const TrainOptions& options, at::Device device);

struct ValueResult {
  TrainResult run;
  double explained_variance_before = 0;  // over the data, of the critic the run started from
  double explained_variance_after = 0;   // over the data, after the run's last update
};

/// Value pretraining: the critic starts from options.model (a policy checkpoint gets a zero head; a critic
/// checkpoint goes on) and learns Monte-Carlo returns: Ret from gae() with gamma 1 and lambda_critic 1, which is
/// the trajectory's reward on every action token. Loss: the token mean of ½ (V − Ret)² over the update's action
/// tokens (value_loss without clipping: there are no old values). The actor is not loaded, so it stays as it is.
/// Runs in Trainer's loop (checkpoints of the critic with its optimizer state, resume); each step's log line has
/// value_loss, explained_variance (the batch's, before the update, over all ranks' shares), value_mean, return_mean,
/// grad_norm, lr, tokens.
std::expected<ValueResult, std::string> train_value(const TrainOptions& options, const std::vector<Sequence>& data,
                                                    const std::function<void(const Json&)>& on_step);

}  // namespace ca::train
