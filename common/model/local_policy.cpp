// local:CKPT: template -> tokens -> generation -> text -> tool calls.
#include "model/local_policy.h"

#include "model/chat_template.h"
#include "policy/tool_call_parser.h"

namespace ca::model {
namespace {

class LocalPolicy final : public Policy {
 public:
  LocalPolicy(std::filesystem::path checkpoint, Generator generator, ChatTemplate chat, LocalPolicyOptions options)
      : m_checkpoint(std::move(checkpoint)),
        m_generator(std::move(generator)),
        m_template(std::move(chat)),
        m_options(std::move(options)) {
    if (m_options.sampling.stop_ids.empty()) {
      m_options.sampling.stop_ids = m_generator.eos_ids();
    }
  }

  void begin(const EpisodeInfo& info) override {
    m_seed = info.seed;
    m_turn = 0;
  }

  std::expected<AssistantTurn, PolicyError> next(const Json& messages, const Json& tools) override {
    const Tokenizer& tok = m_generator.tokenizer();
    Json extra = Json::object();
    for (const char* name : {"bos_token", "eos_token"}) {
      extra[name] = "";
    }
    auto prompt = m_template.render(template_messages(messages), tools, true, extra);
    if (!prompt) {
      return std::unexpected(PolicyError{"chat template: " + prompt.error()});
    }
    const std::vector<int32_t> ids = tok.encode(*prompt);
    SamplingParams sampling = m_options.sampling;
    sampling.seed = m_seed + static_cast<uint64_t>(m_turn++);
    auto done = m_generator.generate({ids}, sampling);
    if (!done) {
      return std::unexpected(PolicyError{done.error()});
    }
    const Completion& c = done->front();
    AssistantTurn turn;
    const std::string text = tok.decode(c.ids, SkipSpecial::yes);
    turn.tool_calls = parse_text_tool_calls(text);
    // The text before the first hermes tag is the turn's content; without tags, all of it.
    const size_t tag = text.find("<tool_call>");
    turn.content = turn.tool_calls.empty() || tag == std::string::npos ? text : text.substr(0, tag);
    while (!turn.content.empty() && std::isspace(static_cast<unsigned char>(turn.content.back()))) {
      turn.content.pop_back();
    }
    turn.finish_reason = turn.tool_calls.empty() ? c.finish_reason : "tool_calls";
    turn.prompt_tokens = static_cast<int64_t>(ids.size());
    turn.completion_tokens = static_cast<int64_t>(c.ids.size());
    turn.token_ids.assign(c.ids.begin(), c.ids.end());
    turn.logprobs = c.logprobs;
    turn.extra = {{"prompt_ids", ids}};
    return turn;
  }

  Json describe() const override {
    const SamplingParams& s = m_options.sampling;
    return {{"name", "local"},
            {"model", m_checkpoint.string()},
            {"sampling",
             {{"temperature", s.temperature},
              {"top_p", s.top_p},
              {"top_k", s.top_k},
              {"max_tokens", s.max_tokens},
              {"device", m_options.device},
              {"dtype", m_options.dtype}}}};
  }

 private:
  std::filesystem::path m_checkpoint;
  Generator m_generator;
  ChatTemplate m_template;
  LocalPolicyOptions m_options;
  uint64_t m_seed = 0;
  int m_turn = 0;
};

}  // namespace

Json template_messages(const Json& messages) {
  Json out = messages;
  for (Json& m : out) {
    if (m.contains("content") && m["content"].is_null()) {
      m["content"] = "";
    }
    if (!m.contains("tool_calls") || !m["tool_calls"].is_array()) {
      continue;
    }
    for (Json& call : m["tool_calls"]) {
      Json* args = call.contains("function") ? &call["function"]["arguments"] : nullptr;
      if (args == nullptr || !args->is_string()) {
        continue;
      }
      Json parsed = Json::parse(args->get<std::string>(), nullptr, false);
      if (!parsed.is_discarded() && parsed.is_object()) {
        *args = parsed;
      }
    }
  }
  return out;
}

std::expected<std::unique_ptr<Policy>, std::string> make_local_policy(const std::filesystem::path& checkpoint,
                                                                      const LocalPolicyOptions& options) {
  auto generator = Generator::load(checkpoint, options.device, options.dtype);
  if (!generator) {
    return std::unexpected(generator.error());
  }
  auto chat = ChatTemplate::load(checkpoint);
  if (!chat) {
    return std::unexpected(chat.error());
  }
  return std::make_unique<LocalPolicy>(checkpoint, std::move(*generator), std::move(*chat), options);
}

}  // namespace ca::model
