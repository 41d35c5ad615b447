// ca-sandbox's subcommands, each a whole run from its arguments to an exit code: make workspaces from task records,
// run a command in one (sandbox.h), pack one into a snapshot and unpack a snapshot (snapshot.h).
#pragma once

#include <string>
#include <vector>

#include "sandbox/sandbox.h"
#include "util/exit_codes.h"

namespace ca {

/// `create`: one workspace per task record of `tasks_path` under dir/<sanitized id>/ (only the task `only_id` when
/// given), each path printed on stdout. A bad record is reported and skipped (exit 1); a missing `only_id` is exit
/// 65, a missing file 66.
ExitCode create_workspaces(const std::string& tasks_path, const std::string& dir, const std::string& only_id,
                           const std::string& backend);

/// `exec`: runs `command` sandboxed in `workspace` (only its kernels/ and /tmp writable) under `limits`, passing its
/// output on and naming a limit that ended it. Returns the command's own exit status, as a shell passes it on; 66
/// when `workspace` is not one, 130 when interrupted, 74 when the sandbox cannot run.
int exec_in_workspace(const std::string& workspace, const std::vector<std::string>& command, bool gpu,
                      const SandboxLimits& limits);

/// `pack`: the workspace as a snapshot archive. Exit 66 for a missing workspace, 74 when packing fails.
ExitCode pack_workspace(const std::string& workspace, const std::string& archive);

/// `unpack`: a snapshot into `destination`, refusing entries that escape it. Exit 66 for a missing archive, 65 for a
/// bad one.
ExitCode unpack_snapshot(const std::string& archive, const std::string& destination);

}  // namespace ca
