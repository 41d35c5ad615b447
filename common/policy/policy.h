// A policy: what acts in an episode. Given the conversation so far (OpenAI chat
// messages) and the tools it may call, it returns the next assistant turn. Every
// policy (an OpenAI-compatible endpoint, a replayed trajectory, the built-in
// kernel writer, a local LibTorch model) sits behind this one interface, so the
// episode loop (rollout/) never knows which one it talks to.
#pragma once

#include <cstdint>
#include <expected>
#include <memory>
#include <string>
#include <vector>

#include "util/jsonl.h"

namespace ca {

/// One call of a tool, as the model wrote it. `arguments` is the raw text the
/// model gave (it may not be JSON: the episode answers that with an error result).
struct ToolCall {
  std::string id;
  std::string name;
  std::string arguments;
};

/// One assistant turn and what it cost.
struct AssistantTurn {
  std::string content;               // text outside tool calls (may be empty)
  std::vector<ToolCall> tool_calls;  // in the order the model made them
  std::string finish_reason;         // "stop", "tool_calls", "length", ... as the policy reports it
  int64_t prompt_tokens = -1;        // -1: the policy does not know
  int64_t completion_tokens = -1;
  std::vector<int64_t> token_ids;  // the completion's tokens, when the policy has them
  std::vector<double> logprobs;    // one per token id, when the policy has them
  Json extra = Json::object();     // policy-specific facts kept in the trajectory (a reasoning note, a request id)
};

/// What a policy knows of the episode it acts in: the task record (the built-in
/// policy reads its program), the workspace's backend and the episode's seed.
struct EpisodeInfo {
  Json task;
  std::string backend;  // "cpu" or "cuda"
  uint64_t seed = 0;
  int sample = 0;  // which of --samples K episodes of this task
};

/// Why a turn could not be had. `retryable` errors were already retried by the
/// policy as far as its own budget allows; the episode records the error and ends.
struct PolicyError {
  std::string message;
};

class Policy {
 public:
  virtual ~Policy() = default;
  /// Called once before an episode's first turn.
  virtual void begin(const EpisodeInfo& info) = 0;
  /// The next assistant turn for `messages` (OpenAI chat messages: system, user,
  /// assistant with tool_calls, tool), given the tools' OpenAI function schemas.
  virtual std::expected<AssistantTurn, PolicyError> next(const Json& messages, const Json& tools) = 0;
  /// What the trajectory records of this policy: {"name": ..., "model": ..., "sampling": {...}}.
  virtual Json describe() const = 0;
};

}  // namespace ca
