// local:CKPT: template -> tokens -> generation -> text -> tool calls.
#include "model/local_policy.h"

#include <algorithm>
#include <cctype>
#include <system_error>

#include "model/transformer.h"
#include "policy/tool_call_parser.h"

namespace ca::model {
namespace {

class LocalPolicy final : public Policy {
 public:
  LocalPolicy(std::shared_ptr<const ChatModel> model, LocalPolicyOptions options)
      : m_model(std::move(model)), m_options(std::move(options)) {}

  void begin(const EpisodeInfo& info) override {
    m_seed = info.seed;
    m_turn = 0;
  }

  std::expected<AssistantTurn, PolicyError> next(const Json& messages, const Json& tools) override {
    auto ids = m_model->prompt_ids(messages, tools);
    if (!ids) {
      return std::unexpected(PolicyError{ids.error()});
    }
    SamplingParams sampling = m_options.sampling;
    sampling.seed = m_seed + static_cast<uint64_t>(m_turn++);
    auto done = m_model->generate({*ids}, sampling);
    if (!done) {
      return std::unexpected(PolicyError{done.error()});
    }
    const Completion& c = done->front();
    ChatReply reply = ChatModel::reply(m_model->text(c), true);
    AssistantTurn turn;
    turn.content = std::move(reply.content);
    turn.tool_calls = std::move(reply.tool_calls);
    turn.finish_reason = turn.tool_calls.empty() ? c.finish_reason : "tool_calls";
    turn.prompt_tokens = static_cast<int64_t>(ids->size());
    turn.completion_tokens = static_cast<int64_t>(c.ids.size());
    turn.token_ids.assign(c.ids.begin(), c.ids.end());
    turn.logprobs = c.logprobs;
    turn.extra = {{"prompt_ids", *ids}};
    if (!turn.tool_calls.empty()) {
      turn.extra["tool_calls_from_text"] = true;
    }
    return turn;
  }

  Json describe() const override {
    const SamplingParams& s = m_options.sampling;
    return {{"name", "local"},
            {"model", m_model->checkpoint().string()},
            {"sampling",
             {{"temperature", s.temperature},
              {"top_p", s.top_p},
              {"top_k", s.top_k},
              {"max_tokens", s.max_tokens},
              {"seed", "per episode and turn"},
              {"device", m_options.device},
              {"dtype", m_options.dtype}}}};
  }

 private:
  std::shared_ptr<const ChatModel> m_model;
  LocalPolicyOptions m_options;
  uint64_t m_seed = 0;
  int m_turn = 0;
};

}  // namespace

ChatModel::ChatModel(std::filesystem::path checkpoint, Generator generator, ChatTemplate chat)
    : m_checkpoint(std::move(checkpoint)), m_generator(std::move(generator)), m_template(std::move(chat)) {}

std::expected<std::shared_ptr<ChatModel>, std::string> ChatModel::load(const std::filesystem::path& checkpoint,
                                                                       const std::string& device,
                                                                       const std::string& dtype) {
  auto generator = Generator::load(checkpoint, device, dtype);
  if (!generator) {
    return std::unexpected(generator.error());
  }
  auto chat = ChatTemplate::load(checkpoint);
  if (!chat) {
    return std::unexpected(chat.error());
  }
  std::error_code ec;  // the trajectory names the checkpoint wherever the run started
  return std::make_shared<ChatModel>(std::filesystem::absolute(checkpoint, ec), std::move(*generator),
                                     std::move(*chat));
}

std::expected<std::vector<int32_t>, std::string> ChatModel::prompt_ids(const Json& messages, const Json& tools) const {
  auto prompt = m_template.render(template_messages(messages), tools, true, {{"bos_token", ""}, {"eos_token", ""}});
  if (!prompt) {
    return std::unexpected("chat template: " + prompt.error());
  }
  return m_generator.tokenizer().encode(*prompt);
}

int64_t ChatModel::context_length() const {
  return m_generator.model().config().max_position_embeddings;
}

std::expected<std::vector<Completion>, std::string> ChatModel::generate(
    const std::vector<std::vector<int32_t>>& prompts, SamplingParams params) const {
  size_t longest = 0;
  for (const auto& p : prompts) {
    longest = std::max(longest, p.size());
  }
  const int64_t left = context_length() - static_cast<int64_t>(longest);
  if (left <= 0) {
    return std::unexpected("the prompt of " + std::to_string(longest) + " tokens fills the model's context of " +
                           std::to_string(context_length()) + " tokens (max_position_embeddings)");
  }
  params.max_tokens = std::min(params.max_tokens, left);
  if (params.stop_ids.empty()) {
    params.stop_ids = m_generator.eos_ids();
  }
  std::lock_guard lock(m_generating);
  return m_generator.generate(prompts, params);
}

std::string ChatModel::text(const Completion& completion) const {
  return m_generator.tokenizer().decode(completion.ids, SkipSpecial::yes);
}

ChatReply ChatModel::reply(const std::string& text, bool parse_tool_calls) {
  ChatReply reply;
  if (parse_tool_calls) {
    reply.tool_calls = parse_text_tool_calls(text);
  }
  const size_t tag = text.find("<tool_call>");
  reply.content = reply.tool_calls.empty() || tag == std::string::npos ? text : text.substr(0, tag);
  while (!reply.content.empty() && std::isspace(static_cast<unsigned char>(reply.content.back()))) {
    reply.content.pop_back();
  }
  return reply;
}

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

std::unique_ptr<Policy> make_local_policy(std::shared_ptr<const ChatModel> model, const LocalPolicyOptions& options) {
  return std::make_unique<LocalPolicy>(std::move(model), options);
}

std::expected<std::unique_ptr<Policy>, std::string> make_local_policy(const std::filesystem::path& checkpoint,
                                                                      const LocalPolicyOptions& options) {
  auto model = ChatModel::load(checkpoint, options.device, options.dtype);
  if (!model) {
    return std::unexpected(model.error());
  }
  return make_local_policy(std::move(*model), options);
}

LocalPolicyOptions local_policy_options(const PolicyOptions& options) {
  LocalPolicyOptions local;
  local.device = options.device;
  local.dtype = options.dtype;
  local.sampling.temperature = options.temperature;
  local.sampling.top_p = options.top_p;
  local.sampling.top_k = options.top_k;
  local.sampling.max_tokens = options.max_tokens;
  return local;
}

void register_local_policy() {
  register_policy_scheme(
      "local",
      [](const std::string& checkpoint, const PolicyOptions& options) -> std::expected<PolicyMaker, PolicySpecError> {
        const LocalPolicyOptions local = local_policy_options(options);
        auto model = ChatModel::load(checkpoint, local.device, local.dtype);
        if (!model) {
          std::error_code ec;
          const ExitCode code = std::filesystem::exists(checkpoint, ec) ? ExitCode::data_error : ExitCode::no_input;
          return std::unexpected(PolicySpecError{"local:" + checkpoint + ": " + model.error(), code});
        }
        std::shared_ptr<const ChatModel> shared = std::move(*model);
        return [shared, local] { return make_local_policy(shared, local); };
      });
}

}  // namespace ca::model
