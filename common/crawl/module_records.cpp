#include "crawl/module_records.h"

#include <algorithm>
#include <cctype>

namespace ca {
namespace {

bool is_identifier_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return text;
}

}  // namespace

std::string module_role(const std::string& class_name) {
  std::string name = lower(class_name);
  auto has = [&](const char* part) { return name.find(part) != std::string::npos; };
  // Rotary first: "LlamaRotaryEmbedding" is no token embedding.
  if (has("rotary")) return "rotary_embedding";
  if (has("attention") || has("attn")) return "attention";
  if (has("mlp") || has("feedforward") || has("ffn")) return "mlp";
  if (has("norm")) return "norm";
  if (has("embed")) return "embedding";
  return "other";
}

std::vector<std::string> config_fields(const std::string& source) {
  static constexpr std::string_view k_prefix = "config.";
  std::vector<std::string> fields;
  for (size_t at = source.find(k_prefix); at != std::string::npos; at = source.find(k_prefix, at + 1)) {
    // "config." as a whole name ("self.config." too), not the tail of "myconfig.".
    if (at > 0 && is_identifier_char(source[at - 1])) continue;
    size_t end = at + k_prefix.size();
    while (end < source.size() && is_identifier_char(source[end])) ++end;
    if (end > at + k_prefix.size()) fields.push_back(source.substr(at + k_prefix.size(), end - at - k_prefix.size()));
  }
  std::sort(fields.begin(), fields.end());
  fields.erase(std::unique(fields.begin(), fields.end()), fields.end());
  return fields;
}

Json module_record(const PyModule& module, const std::string& origin) {
  return {{"kind", "module"},
          {"name", module.name},
          {"file", module.file},
          {"line", module.line},
          {"bases", module.bases},
          {"role", module_role(module.name)},
          {"init_signature", module.init_signature},
          {"init_source", module.init_source},
          {"forward_source", module.forward_source},
          {"config_fields", config_fields(module.init_source + module.forward_source)},
          {"origin", origin}};
}

}  // namespace ca
