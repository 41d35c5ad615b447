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

#include "train/sequence.h"
#include "train/trainer.h"
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

/// Tokenizes `trajectory` into data.kept whatever its reward (value, warmup and ppo learn from failures too).
/// Errors: what tokenize_trajectory says (no reward.value among them).
std::expected<void, std::string> add_record(RftData& data, const Json& trajectory, const model::Tokenizer& tokenizer,
                                            int64_t max_context);

/// Trains the model on `data` with the token-mean NLL of action tokens, one optimizer update per step, in
/// Trainer's loop (trainer.h: checkpoints of the model with its optimizer state, resume, out/log.jsonl with loss,
/// grad_norm, lr, tokens, action_tokens). `on_step` sees every update's log line. Errors: the model, a
/// checkpoint, the log or an empty data set.
std::expected<TrainResult, std::string> train_rft(const TrainOptions& options, const std::vector<Sequence>& data,
                                                  const std::function<void(const Json&)>& on_step);

}  // namespace ca::train
