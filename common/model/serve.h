// `ca-model serve`: an OpenAI-compatible HTTP server over a ChatModel (local_policy.h), so that any OpenAI client
// (ca-rollout's openai:URL, ca-synth --llm, the openai package) can use the project's LibTorch model.
// POST /v1/chat/completions (messages, tools, tool_choice auto/none, temperature, top_p, top_k, max_tokens or
// max_completion_tokens, n, seed, logprobs, top_logprobs, vLLM's return_tokens_as_token_ids and return_token_ids),
// GET /v1/models, GET /health. Tool calls are read out of the generated text with the rollout's parser
// (policy/tool_call_parser.h) into structured tool_calls. Errors are OpenAI error objects with their HTTP status.
#pragma once

#include <cstdint>
#include <expected>
#include <functional>
#include <memory>
#include <string>

#include "model/local_policy.h"
#include "util/jsonl.h"

namespace ca::model {

struct ServeOptions {
  std::string host = "127.0.0.1";
  int port = 8000;                    // 0: any free port (the one bound is reported by on_listening)
  std::string model_name;             // the id requests name; "" and a missing model mean this one too
  int64_t default_max_tokens = 4096;  // when a request gives neither max_tokens nor max_completion_tokens
  int64_t max_n = 16;                 // the most choices one request may ask for
  int64_t max_batch = 16;             // sequences generated together, across requests
  int threads = 8;                    // connections served at once
};

/// An HTTP reply: status and JSON body.
struct ServeReply {
  int status = 200;
  Json body;
};

/// An OpenAI error object ({"error": {message, type, param, code}}) with its HTTP status: 400
/// invalid_request_error, 404 not_found_error, 405, 500 server_error.
ServeReply openai_error(int status, const std::string& message, const std::string& param = "",
                        const std::string& code = "");

/// One parsed chat-completions request: what generation needs and what the reply echoes.
struct ChatRequest {
  std::vector<int32_t> prompt;
  SamplingParams sampling;  // stop ids empty: the model's end of turn
  bool seeded = false;      // a seed was given: the request's draws depend on it alone
  int64_t n = 1;
  bool logprobs = false;
  bool tokens_as_ids = false;     // vLLM's return_tokens_as_token_ids: tokens read "token_id:N"
  bool return_token_ids = false;  // vLLM's return_token_ids: choices[].token_ids and prompt_token_ids
  bool parse_tool_calls = true;   // tool_choice none, or no tools: the text is all content
};

/// Parses and checks a request body against the model (its chat template renders the prompt). Errors are the
/// replies to send: 400 for bad JSON, a bad or missing field, an unsupported option (stream, tool_choice
/// required), a prompt that fills the context; 404 for another model's name.
std::expected<ChatRequest, ServeReply> parse_chat_request(const ChatModel& model, const ServeOptions& options,
                                                          const std::string& body);

/// The chat.completion body for `request`'s completions (request.n of them), with id `id`.
Json chat_completion_body(const ChatModel& model, const ServeOptions& options, const ChatRequest& request,
                          const std::vector<Completion>& completions, const std::string& id);

/// Serves until SIGINT or SIGTERM (their handlers are replaced; requests in flight are answered first) or until the
/// socket fails. Concurrent requests are generated together when their draws do not depend on one
/// another: greedy ones, and sampled ones without a seed of the same temperature, top_p and top_k; a seeded request
/// is generated alone, so that its seed gives the same tokens whoever else asks. `on_listening` gets the bound
/// port once requests are accepted. Returns whether a signal stopped it, or the error (address in use, ...).
std::expected<bool, std::string> serve(std::shared_ptr<const ChatModel> model, const ServeOptions& options,
                                       const std::function<void(int port)>& on_listening);

}  // namespace ca::model
