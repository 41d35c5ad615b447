#include "rollout/tools.h"

#include <fnmatch.h>
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "util/log.h"
#include "util/subprocess.h"
#include "util/unix_socket.h"

namespace ca {
namespace fs = std::filesystem;
namespace {

Json function_schema(const std::string& name, const std::string& description, Json properties, Json required) {
  return {{"type", "function"},
          {"function",
           {{"name", name},
            {"description", description},
            {"parameters",
             {{"type", "object"}, {"properties", std::move(properties)}, {"required", std::move(required)}}}}}};
}

ToolResult failure(std::string message) {
  return {"error: " + std::move(message), false, false};
}

bool glob_match_parts(const std::vector<std::string>& pattern, size_t p, const std::vector<std::string>& path,
                      size_t q) {
  if (p == pattern.size()) return q == path.size();
  if (pattern[p] == "**") {
    for (size_t skip = q; skip <= path.size(); ++skip) {
      if (glob_match_parts(pattern, p + 1, path, skip)) return true;
    }
    return false;
  }
  if (q == path.size() || fnmatch(pattern[p].c_str(), path[q].c_str(), FNM_PERIOD) != 0) return false;
  return glob_match_parts(pattern, p + 1, path, q + 1);
}

std::vector<std::string> components(const std::string& path) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    if (end > start) parts.push_back(path.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

}  // namespace

bool glob_match(const std::string& pattern, const std::string& path) {
  return glob_match_parts(components(pattern), 0, components(path), 0);
}

Json tool_schemas() {
  return Json::array({
      function_schema(
          "bash",
          "Run a bash command in the workspace's sandbox (the workspace root is the current directory; only "
          "kernels/ and /tmp are writable; no GPU, no network; time-limited). Returns its exit status and "
          "output, the middle cut when long.",
          {{"command", {{"type", "string"}, {"description", "The command line, run by bash -c"}}}}, {"command"}),
      function_schema(
          "str_replace_editor",
          "View, create and edit files. Paths are relative to the workspace root; view reads any file or directory of "
          "the workspace, the other commands write only under kernels/.",
          {{"command", {{"type", "string"}, {"enum", {"view", "create", "str_replace", "insert", "undo_edit"}}}},
           {"path", {{"type", "string"}, {"description", "e.g. kernels/kernel.cu or model.py"}}},
           {"file_text", {{"type", "string"}, {"description", "create: the whole file"}}},
           {"old_str", {{"type", "string"}, {"description", "str_replace: text that occurs exactly once"}}},
           {"new_str",
            {{"type", "string"}, {"description", "str_replace: its replacement; insert: the lines to insert"}}},
           {"insert_line",
            {{"type", "integer"}, {"description", "insert: the line after which new_str goes (0: at the top)"}}},
           {"view_range",
            {{"type", "array"},
             {"items", {{"type", "integer"}}},
             {"description", "view: [first, last] lines, last -1 for the end"}}}},
          {"command", "path"}),
      function_schema("glob",
                      "List the workspace's files whose path matches a glob pattern (*, ?, ** across directories).",
                      {{"pattern", {{"type", "string"}, {"description", "e.g. kernels/*.cu or **/*.h"}}}}, {"pattern"}),
      function_schema("verify",
                      "Build the kernels under kernels/ and check them against the reference on fresh inputs; returns "
                      "[PASS]/[FAIL] lines.",
                      Json::object(), Json::array()),
      function_schema(
          "profile",
          "Time the kernels against PyTorch eager and torch.compile; returns 'Torch Baseline: ... us, Torch "
          "Compile: ... us, CUDA Extension: ... us'.",
          Json::object(), Json::array()),
      function_schema("finish", "End the episode; the harness then verifies and profiles kernels/ itself.",
                      {{"message", {{"type", "string"}, {"description", "A short summary of what was done"}}}},
                      Json::array()),
  });
}

Toolbox::Toolbox(std::string workspace, ToolOptions options)
    : m_workspace(std::move(workspace)),
      m_options(std::move(options)),
      m_editor(m_workspace, m_options.output_budget) {}

ToolResult Toolbox::run(const std::vector<std::string>& argv, double timeout_s) {
  SubprocessOptions options;
  options.timeout = std::chrono::milliseconds(int64_t(timeout_s * 1000));
  options.max_output = 4 << 20;
  auto ran = run_subprocess(argv, options);
  if (!ran) return failure("cannot run " + argv[0] + ": " + ran.error());
  std::string text = ran->out;
  if (!ran->err.empty()) text += (text.empty() || text.back() == '\n' ? "" : "\n") + ran->err;
  if (!ran->ok()) text += "\n[" + ran->describe() + "]";
  ToolResult result;
  result.content = cut_middle(text, m_options.output_budget);
  result.ok = ran->ok();
  return result;
}

ToolResult Toolbox::bash(const Json& arguments) {
  auto command = arguments.find("command");
  if (command == arguments.end() || !command->is_string()) return failure("bash needs a string argument 'command'");
  char wall[32];
  std::snprintf(wall, sizeof wall, "%g", m_options.bash_timeout_s);
  ToolResult result = run({m_options.bin_dir + "/ca-sandbox", "exec", m_workspace, "--wall", wall, "--cpu", wall, "--",
                           "bash", "-c", command->get<std::string>()},
                          m_options.bash_timeout_s + 30);
  result.content = cut_middle(result.content, m_options.output_budget);
  return result;
}

ToolResult Toolbox::glob(const Json& arguments) {
  auto pattern = arguments.find("pattern");
  if (pattern == arguments.end() || !pattern->is_string()) return failure("glob needs a string argument 'pattern'");
  std::string matches;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(m_workspace, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    std::string relative = fs::relative(it->path(), m_workspace, ec).string();
    if (glob_match(pattern->get<std::string>(), relative)) matches += relative + "\n";
  }
  return {cut_middle(matches.empty() ? "no files match\n" : matches, m_options.output_budget), true, false};
}

std::optional<ToolResult> Toolbox::ask_judge(const std::string& tool) {
  std::error_code ec;
  Json request = {{"tool", tool},
                  {"workspace", fs::absolute(m_workspace, ec).string()},
                  {"backend", m_options.backend},
                  {"compile", m_options.profile_compile}};
  auto line = unix_request(m_options.judge_socket, request.dump(),
                           std::chrono::milliseconds(int64_t(m_options.check_timeout_s * 1000)));
  if (!line) {
    // No judge, or it died with the request: the cold tools judge it (their result is the same).
    warning(std::string("warm judge: ") + line.error() + "; running ca-" + tool);
    return std::nullopt;
  }
  Json answer = Json::parse(*line, nullptr, false);
  if (!answer.is_object() || !answer.value("exit", Json()).is_number_integer()) {
    warning("warm judge: " + m_options.judge_socket + " gave no answer object; running ca-" + tool);
    return std::nullopt;
  }
  // The text the cold tool's process gives (Toolbox::run): its stdout, its stderr, how it ended.
  const int code = answer["exit"].get<int>();
  std::string text = answer.value("stdout", "");
  std::string err = answer.value("stderr", "");
  if (!err.empty()) text += (text.empty() || text.back() == '\n' ? "" : "\n") + err;
  if (code != 0) text += "\n[exited with status " + std::to_string(code) + "]";
  ToolResult result;
  result.content = cut_middle(text, m_options.output_budget);
  result.ok = code == 0;
  return result;
}

ToolResult Toolbox::check(const std::string& tool) {
  if (!m_options.judge_socket.empty()) {
    if (auto answered = ask_judge(tool)) return *answered;
  }
  std::vector<std::string> argv = {m_options.bin_dir + "/ca-" + tool, "--workspace", m_workspace, "--backend",
                                   m_options.backend};
  if (tool == "profile" && !m_options.profile_compile) argv.push_back("--no-compile");
  return run(argv, m_options.check_timeout_s);
}

ToolResult Toolbox::call(const ToolCall& call) {
  if (call.arguments.size() > m_options.max_argument_bytes) {
    return failure("the call's arguments are " + std::to_string(call.arguments.size()) + " bytes; at most " +
                   std::to_string(m_options.max_argument_bytes) + " are accepted");
  }
  // An empty argument string is an empty object: some servers send "" for tools without parameters.
  Json arguments = call.arguments.empty() ? Json::object() : Json::parse(call.arguments, nullptr, false);
  if (arguments.is_discarded()) return failure("arguments are not valid JSON: " + json_parse_error(call.arguments));
  if (!arguments.is_object()) return failure("arguments must be a JSON object");
  if (call.name == "bash") return bash(arguments);
  if (call.name == "str_replace_editor") {
    auto done = m_editor.run(arguments);
    if (!done) return failure(done.error());
    return {*done, true, false};
  }
  if (call.name == "glob") return glob(arguments);
  if (call.name == "verify" || call.name == "profile") return check(call.name);
  if (call.name == "finish") return {"finished", true, true};
  return failure("unknown tool '" + call.name +
                 "': the tools are bash, str_replace_editor, glob, verify, profile, finish");
}

}  // namespace ca
