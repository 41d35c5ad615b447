// Schema strings as LibTorch prints them: "ns::name.overload(Type name=default, *, Type name=default) -> Ret".
#include "policy/builtin/schema.h"

#include <cstdlib>
#include <vector>

namespace ca {
namespace {

struct Argument {
  std::string name;
  bool has_default = false;
  Json default_value;
  bool keyword_only = false;
};

std::string trim(std::string_view text) {
  size_t begin = text.find_first_not_of(' ');
  if (begin == std::string_view::npos) return "";
  return std::string(text.substr(begin, text.find_last_not_of(' ') + 1 - begin));
}

// A default as JSON: None, True/False, numbers, "[1, 1]" lists, quoted strings.
Json parse_default(const std::string& text) {
  if (text == "None") return nullptr;
  if (text == "True") return true;
  if (text == "False") return false;
  if (text.starts_with('"') || text.starts_with('\'')) return text.substr(1, text.size() - 2);
  if (text.starts_with('[')) {
    Json list = Json::array();
    std::string inner = text.substr(1, text.size() - 2);
    for (size_t start = 0; start < inner.size();) {
      size_t end = std::min(inner.find(',', start), inner.size());
      std::string item = trim(std::string_view(inner).substr(start, end - start));
      if (!item.empty()) list.push_back(parse_default(item));
      start = end + 1;
    }
    return list;
  }
  bool is_float = text.find_first_of(".eE") != std::string::npos;
  if (is_float) return std::strtod(text.c_str(), nullptr);
  return std::strtoll(text.c_str(), nullptr, 10);
}

std::vector<Argument> parse_arguments(std::string_view schema) {
  std::vector<Argument> arguments;
  size_t open = schema.find('(');
  size_t close = schema.find(") ->");
  if (open == std::string_view::npos || close == std::string_view::npos) return arguments;
  std::string_view list = schema.substr(open + 1, close - open - 1);
  bool keyword_only = false;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= list.size(); ++i) {
    char c = i < list.size() ? list[i] : ',';
    if (c == '[' || c == '(') ++depth;
    if (c == ']' || c == ')') --depth;
    if (c != ',' || depth > 0) continue;
    std::string item = trim(list.substr(start, i - start));
    start = i + 1;
    if (item.empty()) continue;
    if (item == "*") {
      keyword_only = true;
      continue;
    }
    Argument argument;
    argument.keyword_only = keyword_only;
    size_t equals = item.find('=');
    std::string declaration = trim(item.substr(0, equals));
    argument.name = declaration.substr(declaration.rfind(' ') + 1);
    if (equals != std::string::npos) {
      argument.has_default = true;
      argument.default_value = parse_default(trim(item.substr(equals + 1)));
    }
    arguments.push_back(std::move(argument));
  }
  return arguments;
}

}  // namespace

std::expected<Json, std::string> bind_schema(std::string_view schema, const Node& node) {
  std::vector<Argument> arguments = parse_arguments(schema);
  Json bound = Json::object();
  size_t positional = 0;
  for (const Json& arg : node.args) {
    if (positional >= arguments.size() || arguments[positional].keyword_only) {
      return std::unexpected("too many positional arguments for " + std::string(schema));
    }
    bound[arguments[positional++].name] = arg;
  }
  for (const auto& [key, value] : node.kwargs.items()) {
    bool known = false;
    for (const Argument& argument : arguments) known = known || argument.name == key;
    if (!known) return std::unexpected("unknown keyword argument '" + key + "'");
    bound[key] = value;
  }
  for (const Argument& argument : arguments) {
    if (bound.contains(argument.name)) continue;
    if (!argument.has_default) return std::unexpected("missing argument '" + argument.name + "'");
    bound[argument.name] = argument.default_value;
  }
  return bound;
}

}  // namespace ca
