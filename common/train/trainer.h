// The training loop every stage of ca-train shares (rft, value, warmup, ppo): the data order, padded
// micro-batches, optimizer updates with warm-up and gradient clipping, checkpoints with optimizer state, an exact
// --resume, the JSONL step log and the stop between updates on SIGINT.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <expected>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "train/distributed.h"
#include "train/optimizer.h"
#include "train/sequence.h"
#include "util/jsonl.h"

namespace ca::train {

struct TrainOptions {
  std::filesystem::path model;  // the starting checkpoint
  std::filesystem::path out;    // checkpoints and log.jsonl
  std::string device = "cpu";   // where the models run ("cpu", "cuda", "cuda:1")
  int64_t steps = 100;          // steps in all (rft, value: one optimizer update each)
  int64_t batch = 8;            // sequences per step
  int64_t micro_batch = 2;      // sequences per forward/backward (gradient accumulation)
  double lr = 1e-5;
  int64_t warmup = 10;  // linear warm-up of the learning rate over this many optimizer updates
  double max_grad_norm = 1.0;
  AdamWOptions adamw;
  int64_t checkpoint_every = 50;
  uint64_t seed = 0;
  bool resume = false;
  // Data parallel (docs/TRAINING.md): null or inactive for one process. With a group, `batch` stays the global
  // batch: every rank draws the same step_indices, trains on its shard_indices of them and normalizes by the whole
  // update's action tokens, gradients are summed over ranks before the clip, only rank 0 writes log and checkpoints.
  const DataParallel* dp = nullptr;
};

/// Rank and world size of `options` (0 and 1 without a data-parallel group).
int rank_of(const TrainOptions& options);
int world_of(const TrainOptions& options);
/// This rank's part of the global `which` (all of it in one process).
std::vector<size_t> my_share(const TrainOptions& options, const std::vector<size_t>& which);

/// Agreement after a step that may fail on some ranks only (loading, a checkpoint on rank 0): every rank learns
/// whether all succeeded, so none waits in a later collective for one that gave up. Returns this rank's error, or
/// "another rank failed" when this one did not, or the collective's error. Without a group: `local`.
std::expected<void, std::string> agree(const DataParallel* dp, const std::expected<void, std::string>& local);

struct TrainResult {
  int64_t first_step = 0;  // 0, or the step resumed from
  int64_t last_step = 0;
  bool interrupted = false;
};

/// The learning rate of update `step` (0-based): lr * min(1, (step + 1) / warmup).
double warmup_lr(double lr, int64_t warmup, int64_t step);

/// The sequences of update `step` (0-based): positions step*batch ... in a stream of epochs, each a permutation
/// of 0..n-1 drawn from `seed` and the epoch number, so that a resumed run sees what an uninterrupted one does.
std::vector<size_t> step_indices(size_t n, int64_t batch, int64_t step, uint64_t seed);

/// `which` cut into consecutive pieces of at most `size` (gradient accumulation's micro-batches).
std::vector<std::vector<size_t>> micro_batches(const std::vector<size_t>& which, int64_t size);

/// Sequences right-padded into one batch on `device`: ids, positions and key_mask (true on real tokens) for
/// Transformer::forward; mask (float, 1 on action tokens) and rewards (float, the sequence's reward on its last
/// action token, 0 elsewhere) for the losses.
struct Batch {
  at::Tensor ids, positions, key_mask, mask, rewards;
  int64_t tokens = 0;         // real tokens
  int64_t action_tokens = 0;  // sum of mask
};
Batch make_batch(const std::vector<Sequence>& data, const std::vector<size_t>& which, at::Device device = at::kCPU);

/// The device a TrainOptions::device string names; errors for a bad string or CUDA without a device.
std::expected<at::Device, std::string> parse_device(const std::string& device);

/// The parameters of one trained model under AdamW, with the run's learning-rate schedule and clipping.
class Optimized {
 public:
  /// Sets requires_grad on `params` (float32 leaves, shared with the model that uses them).
  Optimized(std::map<std::string, at::Tensor> params, double lr, const TrainOptions& options);

  struct Update {
    double grad_norm = 0;  // before clipping
    double lr = 0;
  };
  /// One optimizer update from the gradients accumulated since the last: with TrainOptions::dp, the gradients
  /// summed over ranks (each rank's loss is already normalized by the whole update); then clip to max_grad_norm,
  /// AdamW step with warmup_lr(lr, warmup, updates so far), zero the gradients. Every stage's update goes through
  /// here. Errors: a failed all-reduce (the weights are then left as they were).
  std::expected<Update, std::string> update();

  AdamW& adam() { return m_adam; }
  const std::map<std::string, at::Tensor>& params() const { return m_params; }

 private:
  std::map<std::string, at::Tensor> m_params;
  const DataParallel* m_dp;
  AdamW m_adam;
  double m_lr, m_max_grad_norm;
  int64_t m_warmup;
};

/// One model of a checkpoint: a Hugging Face checkpoint written by `save` into `subdir` ("" for the checkpoint's
/// top, "critic" for the critic of a PPO run), the tokenizer files of TrainOptions::model and the optimizer state
/// (optimizer.safetensors) beside it.
struct CheckpointPart {
  std::string subdir;
  Optimized* optimized = nullptr;
  std::function<std::expected<void, std::string>(const std::filesystem::path&)> save;
};

/// What must match for a resumed run to continue the same run: the options that shape the updates and the data
/// size. A stage adds its own keys.
Json run_identity(const TrainOptions& options, size_t sequences);

class Trainer {
 public:
  /// Prepares a run in options.out (created). With options.resume, finds the newest complete checkpoint there;
  /// errors when its trainer_state.json's run differs from `identity`, or it cannot be read.
  static std::expected<Trainer, std::string> open(const TrainOptions& options, Json identity);

  /// The checkpoint the run resumes from (load the models from it), or nullopt for a fresh start.
  const std::optional<std::filesystem::path>& resumed_from() const { return m_resumed; }
  int64_t first_step() const { return m_first_step; }

  /// Registers a model to checkpoint; on a resumed run loads its optimizer state (and update count) from the
  /// checkpoint's `subdir`. Errors: a missing or mismatched optimizer file.
  std::expected<void, std::string> add_part(CheckpointPart part);

  using Body = std::function<std::expected<Json, std::string>(int64_t step, const std::vector<size_t>& which)>;
  /// Runs steps first_step() .. options.steps-1 over a data set of `n` items: `body` does step `step` on the items
  /// step_indices gives and returns its log fields ("tokens": tokens trained on, for tokens_per_s). Each step's
  /// line goes to out/log.jsonl (with step, seconds, tokens_per_s, peak_rss_mib; a resumed run first cuts the log
  /// back to its checkpoint), then to `on_step`. Checkpoints out/checkpoint-NNNNNN/ every checkpoint_every steps,
  /// after the last and when interrupted (util/signals.h, polled between steps). Errors: the body's, the log's,
  /// a checkpoint's.
  /// With a data-parallel group (all ranks call run): first the ranks check that they resume from the same step
  /// and rank 0's parameters of every part are broadcast; the body's log fields must be batch-wide (summed over
  /// ranks); only rank 0 writes the log and checkpoints, the others wait for it after each step (so a stop or a
  /// resume finds the same state everywhere); a stop on any rank stops all after the same step.
  std::expected<TrainResult, std::string> run(size_t n, const Body& body,
                                              const std::function<void(const Json&)>& on_step);

 private:
  Trainer() = default;
  std::expected<void, std::string> save_checkpoint(int64_t step) const;

  TrainOptions m_options;
  Json m_identity;
  std::optional<std::filesystem::path> m_resumed;
  Json m_resumed_state;
  int64_t m_first_step = 0;
  std::vector<CheckpointPart> m_parts;
};

}  // namespace ca::train
