// The policy `local:CKPT`: the checkpoint run in-process (generate.h) behind ca-rollout's Policy interface. Each
// turn renders the conversation with the model's own chat template, generates, and reads tool calls out of the
// text with the rollout's parser (policy/tool_call_parser.h); the turn carries the completion's token ids and
// logprobs, the pair on-policy training needs.
#pragma once

#include <expected>
#include <filesystem>
#include <memory>
#include <string>

#include "model/generate.h"
#include "policy/policy.h"

namespace ca::model {

struct LocalPolicyOptions {
  std::string device = "cpu";
  std::string dtype = "float32";
  SamplingParams sampling;  // seed: each turn draws with the episode's seed plus the turn's index
};

/// Loads the checkpoint, its tokenizer and its chat template (chat_template.jinja or tokenizer_config.json).
/// Errors name the file that is missing or bad.
std::expected<std::unique_ptr<Policy>, std::string> make_local_policy(const std::filesystem::path& checkpoint,
                                                                      const LocalPolicyOptions& options);

/// OpenAI chat messages as chat templates expect them (what vLLM hands its templates): a tool call's
/// "arguments" string parsed into an object when it is JSON, null content as "".
Json template_messages(const Json& messages);

}  // namespace ca::model
