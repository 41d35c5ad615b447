// Rejection fine-tuning (ca-train rft): which trajectories are kept, and the training run over them (AdamW with
// warm-up, gradient accumulation and clipping, checkpoints with optimizer state, exact resume, a JSONL step log).
#pragma once

#include <cstdint>
#include <expected>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "train/optimizer.h"
#include "train/sequence.h"
#include "util/jsonl.h"

namespace ca::train {

struct RftFilter {
  int64_t max_turns = 0;              // assistant messages at most; 0: no bound
  int64_t max_repeated_failures = 1;  // times one identical failing call (name and arguments) may fail
  bool keep_invalid_calls = false;    // keep calls to unknown tools or with arguments that are not a JSON object
};

/// Why RFT drops a trajectory ("reward <= 0", "turns 12 > 10", "invalid tool call 'x'", "repeated failing call
/// 'verify' (3 times)"), or nullopt to keep it. A record without reward.value is dropped as "no reward".
std::optional<std::string> rft_rejection(const Json& trajectory, const RftFilter& filter);

/// The data of an RFT run: the kept sequences and the count of dropped records per reason.
struct RftData {
  std::vector<Sequence> kept;
  std::map<std::string, int64_t> dropped;
  int64_t records = 0;
  /// "kept 6 of 10 trajectories (reward <= 0: 3, invalid tool call 'x': 1)".
  std::string summary() const;
};

/// Counts `trajectory` as dropped (rft_rejection) or tokenizes it into data.kept. Errors: what tokenize_trajectory
/// says of a record that should have been kept.
std::expected<void, std::string> add_rft_record(RftData& data, const Json& trajectory,
                                                const model::Tokenizer& tokenizer, const RftFilter& filter,
                                                int64_t max_context);

struct TrainOptions {
  std::filesystem::path model;  // the starting checkpoint
  std::filesystem::path out;    // checkpoints and log.jsonl
  int64_t steps = 100;          // optimizer updates in all
  int64_t batch = 8;            // sequences per update
  int64_t micro_batch = 2;      // sequences per forward/backward (gradient accumulation: batch / micro_batch)
  double lr = 1e-5;
  int64_t warmup = 10;  // linear warm-up of the learning rate over this many updates
  double max_grad_norm = 1.0;
  AdamWOptions adamw;
  int64_t checkpoint_every = 50;
  uint64_t seed = 0;
  bool resume = false;
};

struct StepLog {
  int64_t step = 0;  // 1-based
  double loss = 0, grad_norm = 0, lr = 0, seconds = 0;
  int64_t tokens = 0, action_tokens = 0;
  Json to_json() const;
};

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

/// Trains the model on `data` with the token-mean NLL of action tokens. Writes out/checkpoint-NNNNNN/ (config.json,
/// model.safetensors, the tokenizer files of options.model, optimizer.safetensors, trainer_state.json) every
/// checkpoint_every updates and after the last, and out/log.jsonl. With resume, continues from the newest
/// complete checkpoint (error when its run options differ). Stops between updates when util/signals.h says so.
/// `on_step` sees every update's log. Errors: the model, a checkpoint, the log or an empty data set.
std::expected<TrainResult, std::string> train_rft(const TrainOptions& options, const std::vector<Sequence>& data,
                                                  const std::function<void(const StepLog&)>& on_step);

}  // namespace ca::train
