// An agent's workspace for one task (docs/TRAJECTORY.md): SKILL.md, the reference
// model.py, task.json, include/ca_kernel.h and an empty kernels/, the only
// place the agent may write.
#pragma once

#include <expected>
#include <string>
#include <string_view>

#include "ir/program.h"
#include "util/jsonl.h"

namespace ca {

/// Backends a workspace can be written for: "cuda" (.cu files, nvcc) and "cpu" (.cpp files, g++).
inline constexpr std::string_view k_workspace_backends[] = {"cuda", "cpu"};

/// Creates the workspace for `task_record` (a task record: string `id`, a
/// `program`) at `dir`, which must not exist or be empty. The files appear
/// all at once: they are written under a temporary name beside `dir` and
/// renamed. Files are 0644 and directories 0755, whatever the umask, so that
/// the sandbox's unprivileged user can read them. Returns an error naming the
/// field ("program.nodes[1].op: ...", "backend: ...") or the path.
std::expected<void, std::string> create_workspace(const Json& task_record, const std::string& dir,
                                                  std::string_view backend);

/// The backend a workspace was written for, from its workspace.json ({"backend": "cuda"}, written by
/// create_workspace), so that ca-verify and ca-profile judge it as SKILL.md told the agent to write it. "" for a
/// workspace made before workspace.json existed; an error names the file and field.
std::expected<std::string, std::string> workspace_backend(const std::string& dir);

/// The SKILL.md of a workspace: the task, the ABI with a worked example for
/// `backend`, this task's inputs and outputs in ABI order, the tolerances, what
/// is forbidden, and the verify and profile commands.
std::string render_skill_md(const Json& task_record, const Program& program, std::string_view backend);

/// A directory name for a task id: letters, digits, '.', '-' and '_' are
/// kept, anything else becomes '_' ("example/relu" -> "example_relu"); a name
/// that would be empty, "." or ".." gets a leading '_'.
std::string sanitize_id(std::string_view id);

}  // namespace ca
