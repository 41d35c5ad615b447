// replay:FILE: plays back the assistant turns of recorded trajectories, for
// tests and for re-scoring an old run under today's harness.
#pragma once

#include <expected>
#include <memory>
#include <string>
#include <vector>

#include "policy/policy.h"

namespace ca {

/// Reads the trajectory records of a JSONL file (records with `messages`;
/// others are skipped). Errors: the file cannot be read, a line is not JSON
/// (naming file:line), or no record has messages.
std::expected<std::vector<Json>, std::string> load_trajectories(const std::string& path);

/// A policy that answers an episode of task T, sample S with the assistant
/// messages of the recorded trajectory for (T, S), else the first for T, else
/// the first with no task_id (a template for any task), in order. When the
/// recording runs out it returns a turn without tool calls (finish_reason
/// "replay_end"). An episode with no recording fails its first turn.
std::unique_ptr<Policy> make_replay_policy(std::shared_ptr<const std::vector<Json>> trajectories, std::string path);

}  // namespace ca
