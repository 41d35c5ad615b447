// The agent's tools (docs/TRAJECTORY.md) over one workspace: bash in its sandbox,
// str_replace_editor, glob, verify, profile and finish, with their OpenAI
// function schemas. The sandbox and the checks run as the ca-sandbox,
// ca-verify and ca-profile executables beside ca-rollout.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "policy/policy.h"
#include "rollout/editor.h"

namespace ca {

struct ToolOptions {
  std::string bin_dir;           // where ca-sandbox, ca-verify and ca-profile are
  std::string backend = "cpu";   // "cpu" or "cuda"
  double bash_timeout_s = 120;   // one bash command, in the sandbox
  double check_timeout_s = 900;  // one verify or profile, queueing on the device lease included
  size_t output_budget = 16000;  // characters of one tool result; the middle is cut
  size_t max_argument_bytes = 1 << 20;
  bool profile_compile = true;  // false: profile without the torch.compile baseline (--no-compile)
  std::string judge_socket;     // a warm judge (ca-judge serve) for verify and profile; "" or none answering: the
                                // cold tools
};

/// The tools' OpenAI function schemas ([{"type": "function", "function": {...}}]).
Json tool_schemas();

struct ToolResult {
  std::string content;  // what the policy reads
  bool ok = true;       // false: the call failed (bad arguments, a failing command, a failed check)
  bool finish = false;  // the call was `finish`
};

class Toolbox {
 public:
  Toolbox(std::string workspace, ToolOptions options);
  /// Runs one call. Every failure (unknown tool, arguments that are not a
  /// JSON object or miss a field, an oversized call, a command that cannot
  /// start) is a result with ok false and a message for the policy.
  ToolResult call(const ToolCall& call);

 private:
  ToolResult bash(const Json& arguments);
  ToolResult glob(const Json& arguments);
  ToolResult check(const std::string& tool);
  /// verify or profile through the warm judge; nullopt when it cannot answer (the cold tools then run).
  std::optional<ToolResult> ask_judge(const std::string& tool);
  ToolResult run(const std::vector<std::string>& argv, double timeout_s);

  std::string m_workspace;
  ToolOptions m_options;
  FileEditor m_editor;
};

/// Whether `path` (relative, '/'-separated) matches glob `pattern`: `*` and
/// `?` within one component, `**` across any number of them.
bool glob_match(const std::string& pattern, const std::string& path);

}  // namespace ca
