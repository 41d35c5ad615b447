// Tool calls that a model left in its text instead of the structured
// `tool_calls` field: hermes `<tool_call>{json}</tool_call>` tags, fenced
// ```json blocks, or a bare JSON object. Small models and servers whose chat
// template has no tools answer this way; the parser never throws.
#pragma once

#include <string>
#include <vector>

#include "policy/policy.h"

namespace ca {

/// The tool calls written in `text`, in order; ids are "text_call_<n>". The
/// first form found decides: hermes tags, else fenced blocks, else bare JSON
/// objects. A call is an object with a string "name" and "arguments" (or
/// "parameters"), optionally wrapped as {"function": {...}}; object arguments
/// are kept as their JSON text, string ones as they are. Anything else
/// (malformed JSON, objects without a name) is not a call. Never throws.
std::vector<ToolCall> parse_text_tool_calls(const std::string& text);

}  // namespace ca
