// A trajectory record (docs/TRAJECTORY.md) as a training sequence: token ids, a response mask (1 on the tokens
// the model produced, 0 on the prompt and tool results) and the terminal reward on the last action token.
// The text is laid out in ChatML (Qwen2.5/SmolLM2's hermes layout, written here, not the checkpoint's own Jinja
// template: see docs/TRAINING.md, "Limits"), and every sequence is checked to tokenize turn by turn exactly as
// the whole conversation does.
#pragma once

#include <cstdint>
#include <expected>
#include <string>
#include <vector>

#include "model/tokenizer.h"
#include "util/jsonl.h"

namespace ca::train {

struct Sequence {
  std::string id;
  std::string task_id;  // the record's task_id (else its id up to '#'): what warm-up's groups gather by
  std::vector<int64_t> ids;
  std::vector<uint8_t> mask;  // 1 on action tokens
  double reward = 0;          // the record's reward.value; it belongs to the last action token
  int64_t action_tokens() const;
};

/// One text piece of a conversation and whether the model wrote it.
struct Segment {
  std::string text;
  bool action = false;
};

/// The conversation of a trajectory as ChatML segments: each assistant message is a prompt part
/// ("<|im_start|>assistant\n") and an action part (content, then each call as "<tool_call>\n{"name": N,
/// "arguments": RAW}\n</tool_call>", then "<|im_end|>"); tool results come back as user turns wrapped in
/// <tool_response>; the tools' schemas go into the system message. Errors name the bad message.
std::expected<std::vector<Segment>, std::string> chatml_segments(const Json& trajectory);

/// Tokenizes a trajectory. Errors: a missing reward.value or messages, no assistant token, the turn-by-turn
/// tokens differing from the whole text's (names the first differing token), more than `max_tokens` tokens
/// (sequences are never truncated: the reward sits on the last token).
std::expected<Sequence, std::string> tokenize_trajectory(const Json& trajectory, const model::Tokenizer& tokenizer,
                                                         int64_t max_tokens);

}  // namespace ca::train
