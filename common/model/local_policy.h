// The policy `local:CKPT`: the checkpoint run in-process (generate.h) behind ca-rollout's Policy interface. Each
// turn renders the conversation with the model's own chat template, generates, and reads tool calls out of the
// text with the rollout's parser (policy/tool_call_parser.h); the turn carries the completion's token ids and
// logprobs, the pair on-policy training needs. ChatModel, the loaded checkpoint, is shared by every episode of a
// run and by `ca-model serve` (model/serve.h).
#pragma once

#include <expected>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "model/chat_template.h"
#include "model/generate.h"
#include "policy/factory.h"
#include "policy/policy.h"

namespace ca::model {

struct LocalPolicyOptions {
  std::string device = "cpu";
  std::string dtype = "float32";
  SamplingParams sampling;  // seed: each turn draws with the episode's seed plus the turn's index
};

/// A completion's text as a chat reply: the tool calls written in it and the content outside them.
struct ChatReply {
  std::string content;  // the text before the first hermes <tool_call> tag (all of it without tags), trailing space cut
  std::vector<ToolCall> tool_calls;
};

/// A checkpoint ready to chat: generator, tokenizer and chat template, loaded once. Thread-safe: generations run one
/// at a time (they compete for the same device anyway); rendering and parsing run in the callers' threads.
class ChatModel {
 public:
  /// Loads `checkpoint` (config.json, safetensors, tokenizer.json, chat_template.jinja or tokenizer_config.json's
  /// chat_template). Errors name the file that is missing or bad, or the bad device or dtype.
  static std::expected<std::shared_ptr<ChatModel>, std::string> load(const std::filesystem::path& checkpoint,
                                                                     const std::string& device,
                                                                     const std::string& dtype);

  /// The token ids of the prompt for OpenAI chat `messages` and the tools' function schemas (null or empty: none),
  /// rendered by the model's template with the generation prompt. Errors: the template's (named with its line).
  std::expected<std::vector<int32_t>, std::string> prompt_ids(const Json& messages, const Json& tools) const;

  /// Completions of `prompts`; no stop ids means the model's end-of-turn ids. max_tokens is cut to what the
  /// context (max_position_embeddings) leaves after the longest prompt. Errors: a prompt that fills the context,
  /// and generate()'s.
  std::expected<std::vector<Completion>, std::string> generate(const std::vector<std::vector<int32_t>>& prompts,
                                                               SamplingParams params) const;

  /// The text of a completion (special tokens left out).
  std::string text(const Completion& completion) const;

  /// `text` as a reply; with `parse_tool_calls` false, all of it is content.
  static ChatReply reply(const std::string& text, bool parse_tool_calls);

  const Generator& generator() const { return m_generator; }
  const std::filesystem::path& checkpoint() const { return m_checkpoint; }
  /// The longest prompt plus completion the model takes (config.json's max_position_embeddings).
  int64_t context_length() const;

  ChatModel(std::filesystem::path checkpoint, Generator generator, ChatTemplate chat);

 private:
  std::filesystem::path m_checkpoint;
  Generator m_generator;
  ChatTemplate m_template;
  mutable std::mutex m_generating;
};

/// Loads the checkpoint and makes a policy over it. Errors: ChatModel::load's.
std::expected<std::unique_ptr<Policy>, std::string> make_local_policy(const std::filesystem::path& checkpoint,
                                                                      const LocalPolicyOptions& options);

/// A policy over an already loaded model (episodes of one run share it).
std::unique_ptr<Policy> make_local_policy(std::shared_ptr<const ChatModel> model, const LocalPolicyOptions& options);

/// The local options that ca-rollout's policy flags (policy/factory.h) give: device, dtype, temperature, top_p,
/// top_k, max_tokens.
LocalPolicyOptions local_policy_options(const PolicyOptions& options);

/// Teaches the policy factory `local:CKPT` (policy/factory.h's register_policy_scheme): the checkpoint is loaded
/// once per run; a missing checkpoint is a no_input error, one that does not load a data_error.
void register_local_policy();

/// OpenAI chat messages as chat templates expect them (what vLLM hands its templates): a tool call's
/// "arguments" string parsed into an object when it is JSON, null content as "".
Json template_messages(const Json& messages);

}  // namespace ca::model
