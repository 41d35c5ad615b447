// openai:URL: a policy served by any OpenAI-compatible chat-completions
// endpoint (vLLM, SGLang, llama.cpp's server, `transformers serve`, hosted
// APIs), with tools; tool calls from `tool_calls` or, failing that, from text.
#pragma once

#include <expected>
#include <memory>
#include <string>

#include "http/http.h"
#include "policy/factory.h"
#include "policy/policy.h"

namespace ca {

/// The request body: model, messages, tools (tool_choice "auto"), temperature,
/// top_p, max_tokens, and seed when options.send_seed; logprobs (with vLLM's
/// return_tokens_as_token_ids) when options.logprobs.
Json chat_completion_request(const Json& messages, const Json& tools, const PolicyOptions& options, uint64_t seed);

/// The assistant turn in a chat-completion response body: choices[0]'s
/// content, tool_calls (or, when there are none, the calls written in the
/// content: policy/tool_call_parser.h, with extra.tool_calls_from_text true),
/// finish_reason, usage, and logprobs.content[] as logprobs (token ids where
/// tokens read "token_id:N", or from choices[0].token_ids). Errors: the body
/// is not JSON (with where it breaks), has no choices[0].message, or is an
/// {"error": ...} object (its message). Never throws.
std::expected<AssistantTurn, std::string> parse_chat_completion(const std::string& body);

/// The policy for `url` (an API base such as http://127.0.0.1:8000/v1;
/// /chat/completions is appended), posting through `transport`. The API key
/// is read from $options.api_key_env (none sent when unset or empty).
std::unique_ptr<Policy> make_openai_policy(const std::string& url, const PolicyOptions& options,
                                           HttpTransport transport = curl_post);

}  // namespace ca
