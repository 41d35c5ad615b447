// The placeholder formatter of text_format.h over snprintf.
#include "util/text_format.h"

#include <cstdio>

namespace ca {

namespace {

std::string printf_one(const std::string& spec, const FormatArg& arg) {
  char buffer[128];
  if (const auto* text = std::get_if<std::string>(&arg)) return *text;
  if (const auto* integer = std::get_if<int64_t>(&arg)) {
    std::snprintf(buffer, sizeof buffer, ("%" + spec + "lld").c_str(), static_cast<long long>(*integer));
    return buffer;
  }
  double value = std::get<double>(arg);
  bool has_conversion = !spec.empty() && std::string("fFgGeE").find(spec.back()) != std::string::npos;
  std::snprintf(buffer, sizeof buffer, ("%" + spec + (has_conversion ? "" : "g")).c_str(), value);
  return buffer;
}

}  // namespace

std::string format_args(std::string_view pattern, const std::vector<FormatArg>& args) {
  std::string out;
  size_t next = 0;
  for (size_t i = 0; i < pattern.size(); ++i) {
    size_t close = pattern[i] == '{' ? pattern.find('}', i) : std::string_view::npos;
    if (close == std::string_view::npos) {
      out += pattern[i];
      continue;
    }
    std::string_view inside = pattern.substr(i + 1, close - i - 1);
    std::string spec = inside.starts_with(':') ? std::string(inside.substr(1)) : "";
    if (next < args.size()) out += printf_one(spec, args[next++]);
    i = close;
  }
  return out;
}

}  // namespace ca
