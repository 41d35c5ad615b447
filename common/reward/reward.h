// The episode reward (docs/RECORDS.md#reward) from a record's `verify` and `profile`.
#pragma once

#include <expected>
#include <string>
#include <vector>

#include "util/jsonl.h"

namespace ca {

enum class RewardRule {
  paper,       // -1 wrong; 1 correct; 2 if faster than eager; 3 if faster than eager and compile
  binary,      // -1 wrong; 1 correct
  log_speedup  // -1 wrong; else 1 + max(0, log2(speedup vs compile, or vs eager without one))
};

std::vector<std::string> reward_rule_names();
std::expected<RewardRule, std::string> parse_reward_rule(std::string_view name);

struct RewardOptions {
  RewardRule rule = RewardRule::paper;
  double eager_threshold = 1.05;  // "faster" means speedup above this
  double compile_threshold = 1.05;
};

/// Returns `record` with `reward: {value, rule, reason}` added. A record
/// without `verify` is an error (the reward needs a verdict). A profile with
/// ok false is -1 like a failed verdict (a timed call was wrong, or its time
/// below the speed-of-light floor), unless it says `skipped`; a missing or
/// skipped profile caps the reward at 1, a missing compile time at 2, and the
/// reason says so.
std::expected<Json, std::string> add_reward(const Json& record, const RewardOptions& options);

}  // namespace ca
