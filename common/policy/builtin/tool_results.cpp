// Tool results as text: found by marker, numbers read after their label.
#include "policy/builtin/tool_results.h"

#include <cstdlib>
#include <sstream>

namespace ca {
namespace {

std::string content_text(const Json& content) {
  if (content.is_string()) return content.get<std::string>();
  std::string text;
  if (!content.is_array()) return text;
  for (const Json& part : content) {  // OpenAI content parts: [{"type": "text", "text": ...}]
    if (part.is_object() && part.value("type", "") == "text") text += part.value("text", "");
  }
  return text;
}

std::optional<double> number_after(const std::string& text, const std::string& label) {
  size_t at = text.find(label);
  if (at == std::string::npos) return std::nullopt;
  const char* start = text.c_str() + at + label.size();
  char* end = nullptr;
  double value = std::strtod(start, &end);
  if (end == start) return std::nullopt;
  return value;
}

}  // namespace

std::string last_tool_result(const Json& messages) {
  if (!messages.is_array()) return "";
  for (auto it = messages.rbegin(); it != messages.rend(); ++it) {
    if (it->is_object() && it->value("role", "") == "tool") return content_text(it->value("content", Json()));
  }
  return "";
}

bool offers_tool(const Json& tools, const std::string& name) {
  if (!tools.is_array()) return false;
  for (const Json& tool : tools) {
    if (!tool.is_object()) continue;
    if (tool.value("name", "") == name) return true;
    if (tool.contains("function") && tool["function"].is_object() && tool["function"].value("name", "") == name)
      return true;
  }
  return false;
}

std::string first_line(const std::string& text) {
  return text.substr(0, text.find('\n'));
}

bool is_tool_error(const std::string& result) {
  std::string line = first_line(result);
  return line.starts_with("error") || line.starts_with("Error");
}

VerifyOutcome parse_verify(const std::string& result) {
  VerifyOutcome outcome;
  bool pass = false;
  std::istringstream lines(result);
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("[PASS]")) pass = true;
    if (line.starts_with("[FAIL]") && outcome.failure.empty()) outcome.failure = line.substr(7);
  }
  outcome.passed = pass && outcome.failure.empty();
  if (!pass && outcome.failure.empty()) outcome.failure = "no verdict: " + first_line(result);
  return outcome;
}

ProfileOutcome parse_profile(const std::string& result) {
  ProfileOutcome outcome;
  outcome.eager_us = number_after(result, "Torch Baseline:");
  outcome.compile_us = number_after(result, "Torch Compile:");
  outcome.candidate_us = number_after(result, "CUDA Extension:");
  return outcome;
}

}  // namespace ca
