#include "policy/tool_call_parser.h"

#include <optional>

namespace ca {
namespace {

// The call an object describes, or nullopt when it is not one.
std::optional<ToolCall> call_of(const Json& object) {
  if (!object.is_object()) return std::nullopt;
  auto function = object.find("function");
  if (function != object.end() && function->is_object()) return call_of(*function);
  auto name = object.find("name");
  if (name == object.end() || !name->is_string()) return std::nullopt;
  auto arguments = object.find("arguments");
  if (arguments == object.end()) arguments = object.find("parameters");
  ToolCall call;
  call.name = name->get<std::string>();
  if (arguments == object.end()) {
    call.arguments = "{}";
  } else if (arguments->is_string()) {
    call.arguments = arguments->get<std::string>();
  } else {
    call.arguments = arguments->dump(-1, ' ', false, Json::error_handler_t::replace);
  }
  return call;
}

void add_calls_from_json(const std::string& text, std::vector<ToolCall>& calls) {
  Json parsed = Json::parse(text, nullptr, false);
  if (parsed.is_discarded()) return;
  if (parsed.is_array()) {  // some models put several calls in one block
    for (const auto& item : parsed) {
      if (auto call = call_of(item)) calls.push_back(*call);
    }
    return;
  }
  if (auto call = call_of(parsed)) calls.push_back(*call);
}

// The end of the JSON object that starts at text[begin] == '{' (one past its
// closing brace), honouring strings and escapes; npos when it never closes.
size_t object_end(const std::string& text, size_t begin) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = begin; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"')
      in_string = true;
    else if (c == '{')
      ++depth;
    else if (c == '}' && --depth == 0)
      return i + 1;
  }
  return std::string::npos;
}

std::vector<ToolCall> hermes_calls(const std::string& text) {
  static const std::string open = "<tool_call>", close = "</tool_call>";
  std::vector<ToolCall> calls;
  for (size_t at = text.find(open); at != std::string::npos; at = text.find(open, at)) {
    size_t begin = at + open.size();
    size_t end = text.find(close, begin);
    add_calls_from_json(text.substr(begin, end == std::string::npos ? std::string::npos : end - begin), calls);
    if (end == std::string::npos) break;
    at = end + close.size();
  }
  return calls;
}

std::vector<ToolCall> fenced_calls(const std::string& text) {
  std::vector<ToolCall> calls;
  for (size_t at = text.find("```"); at != std::string::npos;) {
    size_t line_end = text.find('\n', at);
    if (line_end == std::string::npos) break;
    size_t end = text.find("```", line_end);
    add_calls_from_json(text.substr(line_end + 1, end == std::string::npos ? std::string::npos : end - line_end - 1),
                        calls);
    if (end == std::string::npos) break;
    at = text.find("```", end + 3);
  }
  return calls;
}

std::vector<ToolCall> bare_calls(const std::string& text) {
  std::vector<ToolCall> calls;
  for (size_t at = text.find('{'); at != std::string::npos;) {
    size_t end = object_end(text, at);
    if (end == std::string::npos) break;
    size_t before = calls.size();
    add_calls_from_json(text.substr(at, end - at), calls);
    // A call's object is consumed whole; anything else may hold one inside.
    at = text.find('{', calls.size() > before ? end : at + 1);
  }
  return calls;
}

}  // namespace

std::vector<ToolCall> parse_text_tool_calls(const std::string& text) {
  std::vector<ToolCall> calls = hermes_calls(text);
  if (calls.empty()) calls = fenced_calls(text);
  if (calls.empty()) calls = bare_calls(text);
  for (size_t i = 0; i < calls.size(); ++i) calls[i].id = "text_call_" + std::to_string(i);
  return calls;
}

}  // namespace ca
