// One episode (docs/TRAJECTORY.md): a workspace for the task, a conversation with the
// policy through the tools until it finishes, stops calling tools or hits a
// limit, then the harness's own judgement of kernels/, all in one trajectory
// record (docs/TRAJECTORY.md).
#pragma once

#include <cstdint>
#include <string>

#include "policy/policy.h"
#include "rollout/judge.h"
#include "rollout/tools.h"

namespace ca {

struct EpisodeLimits {
  int max_turns = 200;                  // the paper's
  int64_t max_context_tokens = 131072;  // reported by the policy, else estimated as characters / 4
  double max_wall_s = 7200;             // the whole episode before the judgement
};

struct EpisodeOptions {
  EpisodeLimits limits;
  ToolOptions tools;
  JudgeOptions judge;
  std::string work_dir;         // workspaces go to <work_dir>/<task id>-s<sample>
  bool keep_workspace = false;  // leave the workspace and the judge's files behind
};

/// The system prompt for `backend`.
std::string system_prompt(const std::string& backend);

/// The episode of `task` (a task record with a string id), sample `sample`,
/// with `policy` (begin() is called here). Never fails: whatever goes wrong
/// (the workspace, the policy, the judge) is the record's `error`, and an
/// interrupt ends it with end.reason "interrupted".
Json run_episode(const Json& task, int sample, uint64_t seed, Policy& policy, const EpisodeOptions& options);

}  // namespace ca
