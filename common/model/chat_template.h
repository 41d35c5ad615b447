// A model's chat template (the Jinja text of tokenizer_config.json's chat_template or chat_template.jinja) run
// as transformers' apply_chat_template runs it: messages (system, user, assistant with tool_calls, tool), the
// tools' schemas, add_generation_prompt. The interpreter covers the Jinja the ChatML/hermes templates of
// SmolLM2 and Qwen2.5 use (if/elif/else, for with loop.*, set, filters, tests, methods); anything else is an
// error when the template is read, never a silently different text.
#pragma once

#include <expected>
#include <filesystem>
#include <memory>
#include <string>

#include "util/jsonl.h"

namespace ca::model {

class ChatTemplate {
 public:
  /// Parses Jinja source. The error names the line and the construct not supported.
  static std::expected<ChatTemplate, std::string> parse(const std::string& source);
  /// The template of a checkpoint directory: chat_template.jinja, else tokenizer_config.json's chat_template.
  static std::expected<ChatTemplate, std::string> load(const std::filesystem::path& dir);
  ChatTemplate(ChatTemplate&&) noexcept;
  ChatTemplate& operator=(ChatTemplate&&) noexcept;
  ~ChatTemplate();

  /// The prompt text for `messages` (OpenAI chat messages) and `tools` (function schemas, or null/empty for
  /// none). `extra` adds variables (bos_token, eos_token, ...). Errors: a runtime error of the template
  /// (raise_exception, a bad operand), named with its line.
  std::expected<std::string, std::string> render(const Json& messages, const Json& tools, bool add_generation_prompt,
                                                 const Json& extra = Json::object()) const;

 private:
  struct Impl;
  explicit ChatTemplate(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> m_impl;
};

/// JSON as Python's json.dumps writes it with ensure_ascii=False (", " and ": " separators): Jinja's tojson in
/// transformers.
std::string python_json(const Json& value);

}  // namespace ca::model
