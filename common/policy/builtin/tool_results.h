// Reading what the tools answered, as the built-in policy needs it: the last tool message, ca-verify's
// [PASS]/[FAIL] lines and the profile's timing line.
#pragma once

#include <optional>
#include <string>

#include "util/jsonl.h"

namespace ca {

/// The content of the last message with role "tool" ("" when there is none).
std::string last_tool_result(const Json& messages);
/// Whether `tools` (OpenAI function schemas) offers a function named `name`.
bool offers_tool(const Json& tools, const std::string& name);
/// Whether a tool result reports an error of the tool itself ("error: ..." first line).
bool is_tool_error(const std::string& result);
std::string first_line(const std::string& text);

struct VerifyOutcome {
  bool passed = false;  // a [PASS] line and no [FAIL] line
  std::string failure;  // the first [FAIL] line's "<stage>: message", or why nothing was judged
};
VerifyOutcome parse_verify(const std::string& result);

struct ProfileOutcome {
  std::optional<double> candidate_us, eager_us, compile_us;
};
/// Reads "Torch Baseline: X us, Torch Compile: Y us, CUDA Extension: Z us" (Compile may be missing or n/a).
ProfileOutcome parse_profile(const std::string& result);

}  // namespace ca
