#include "policy/openai_policy.h"

#include <chrono>
#include <cstdlib>

#include "policy/tool_call_parser.h"

namespace ca {
namespace {

const Json* member(const Json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  auto found = object.find(key);
  return found == object.end() ? nullptr : &*found;
}

std::string string_or_empty(const Json* value) {
  return value && value->is_string() ? value->get<std::string>() : "";
}

int64_t int_or(const Json* value, int64_t fallback) {
  return value && value->is_number_integer() ? value->get<int64_t>() : fallback;
}

std::vector<ToolCall> structured_calls(const Json* calls) {
  std::vector<ToolCall> result;
  if (!calls || !calls->is_array()) return result;
  for (const auto& call : *calls) {
    const Json* function = member(call, "function");
    if (!function || !function->is_object()) continue;
    ToolCall tool_call;
    tool_call.id = string_or_empty(member(call, "id"));
    tool_call.name = string_or_empty(member(*function, "name"));
    const Json* arguments = member(*function, "arguments");
    if (arguments && arguments->is_string()) tool_call.arguments = arguments->get<std::string>();
    if (arguments && !arguments->is_string() && !arguments->is_null()) {
      tool_call.arguments = arguments->dump(-1, ' ', false, Json::error_handler_t::replace);
    }
    result.push_back(std::move(tool_call));
  }
  return result;
}

void read_logprobs(const Json& choice, AssistantTurn& turn) {
  const Json* content = member(choice, "logprobs") ? member(*member(choice, "logprobs"), "content") : nullptr;
  if (content && content->is_array()) {
    for (const auto& token : *content) {
      const Json* logprob = member(token, "logprob");
      if (!logprob || !logprob->is_number()) continue;
      turn.logprobs.push_back(logprob->get<double>());
      std::string text = string_or_empty(member(token, "token"));
      if (text.starts_with("token_id:")) turn.token_ids.push_back(std::strtoll(text.c_str() + 9, nullptr, 10));
    }
  }
  const Json* ids = member(choice, "token_ids");
  if (turn.token_ids.empty() && ids && ids->is_array()) {
    for (const auto& id : *ids) {
      if (id.is_number_integer()) turn.token_ids.push_back(id.get<int64_t>());
    }
  }
}

class OpenAiPolicy : public Policy {
 public:
  OpenAiPolicy(std::string url, PolicyOptions options, HttpTransport transport)
      : m_url(std::move(url)), m_options(std::move(options)), m_transport(std::move(transport)) {
    while (!m_url.empty() && m_url.back() == '/') m_url.pop_back();
    const char* key = std::getenv(m_options.api_key_env.c_str());
    m_headers = {"Content-Type: application/json"};
    if (key && *key) m_headers.push_back(std::string("Authorization: Bearer ") + key);
    m_http.timeout_s = m_options.request_timeout_s;
    m_http.retries = m_options.retries;
    m_http.backoff_s = m_options.backoff_s;
  }

  void begin(const EpisodeInfo& info) override { m_seed = info.seed; }

  std::expected<AssistantTurn, PolicyError> next(const Json& messages, const Json& tools) override {
    std::string body = chat_completion_request(messages, tools, m_options, m_seed)
                           .dump(-1, ' ', false, Json::error_handler_t::replace);
    auto reply = http_post(m_url + "/chat/completions", body, m_headers, m_http, m_transport);
    if (!reply) return std::unexpected(PolicyError{m_url + "/chat/completions: " + reply.error()});
    auto turn = parse_chat_completion(*reply);
    if (!turn) return std::unexpected(PolicyError{m_url + "/chat/completions: " + turn.error()});
    return std::move(*turn);
  }

  Json describe() const override {
    Json sampling = {{"temperature", m_options.temperature},
                     {"top_p", m_options.top_p},
                     {"max_tokens", m_options.max_tokens},
                     {"seed", m_options.send_seed ? Json("per episode") : Json(nullptr)},
                     {"logprobs", m_options.logprobs}};
    return {{"name", "openai"}, {"url", m_url}, {"model", m_options.model}, {"sampling", sampling}};
  }

 private:
  std::string m_url;
  PolicyOptions m_options;
  HttpTransport m_transport;
  HttpOptions m_http;
  std::vector<std::string> m_headers;
  uint64_t m_seed = 0;
};

}  // namespace

Json chat_completion_request(const Json& messages, const Json& tools, const PolicyOptions& options, uint64_t seed) {
  Json request = {{"model", options.model},
                  {"messages", messages},
                  {"tools", tools},
                  {"tool_choice", "auto"},
                  {"temperature", options.temperature},
                  {"top_p", options.top_p},
                  {"max_tokens", options.max_tokens}};
  // Servers take seeds as signed 64-bit at most; keep it in int range for all.
  if (options.send_seed) request["seed"] = seed & 0x7fffffff;
  if (options.logprobs) {
    request["logprobs"] = true;
    request["top_logprobs"] = 1;  // llama-cpp-python returns no logprobs without it
    request["return_tokens_as_token_ids"] = true;
  }
  return request;
}

std::expected<AssistantTurn, std::string> parse_chat_completion(const std::string& body) {
  Json reply = Json::parse(body, nullptr, false);
  if (reply.is_discarded()) return std::unexpected("reply is not JSON: " + json_parse_error(body));
  if (const Json* error = member(reply, "error")) {
    std::string message = string_or_empty(member(*error, "message"));
    return std::unexpected("server error: " +
                           (message.empty() ? error->dump(-1, ' ', false, Json::error_handler_t::replace) : message));
  }
  const Json* choices = member(reply, "choices");
  if (!choices || !choices->is_array() || choices->empty() || !member((*choices)[0], "message")) {
    return std::unexpected("not a chat completion: no choices[0].message");
  }
  const Json& choice = (*choices)[0];
  const Json& message = *member(choice, "message");
  AssistantTurn turn;
  turn.content = string_or_empty(member(message, "content"));
  turn.finish_reason = string_or_empty(member(choice, "finish_reason"));
  turn.tool_calls = structured_calls(member(message, "tool_calls"));
  if (turn.tool_calls.empty() && !turn.content.empty()) {
    turn.tool_calls = parse_text_tool_calls(turn.content);
    if (!turn.tool_calls.empty()) turn.extra["tool_calls_from_text"] = true;
  }
  std::string reasoning = string_or_empty(member(message, "reasoning_content"));
  if (!reasoning.empty()) turn.extra["reasoning_content"] = reasoning;
  std::string id = string_or_empty(member(reply, "id"));
  if (!id.empty()) turn.extra["response_id"] = id;
  if (const Json* usage = member(reply, "usage")) {
    turn.prompt_tokens = int_or(member(*usage, "prompt_tokens"), -1);
    turn.completion_tokens = int_or(member(*usage, "completion_tokens"), -1);
  }
  read_logprobs(choice, turn);
  return turn;
}

std::unique_ptr<Policy> make_openai_policy(const std::string& url, const PolicyOptions& options,
                                           HttpTransport transport) {
  return std::make_unique<OpenAiPolicy>(url, options, std::move(transport));
}

}  // namespace ca
