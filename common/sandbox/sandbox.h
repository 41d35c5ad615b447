// Runs one command isolated with bubblewrap (DESIGN §6, §9; EXPLOITS A4, C4):
// no network, its own PID/IPC/UTS namespaces, a read-only view of the system
// directories and of the workspace, only the named paths writable, resource
// limits, and a wall-clock timeout that kills everything inside.
#pragma once

#include <cstdint>
#include <expected>
#include <string>
#include <vector>

namespace ca {

struct SandboxLimits {
  double wall_s = 60;                  // enforced by the parent, which kills the sandbox
  double cpu_s = 60;                   // RLIMIT_CPU: per process, so the wall limit backs it up
  int64_t memory_bytes = 8LL << 30;    // RLIMIT_AS (RLIMIT_DATA with gpu, see run_sandboxed)
  int processes = 64;                  // RLIMIT_NPROC: counts every process of the sandbox's user
  int64_t file_bytes = 256LL << 20;    // RLIMIT_FSIZE: the largest file the command may write
};

struct SandboxSpec {
  std::vector<std::string> argv;      // argv[0] is resolved on the sandbox's PATH
  std::string workdir;                // host directory mounted read-only at the same path; the cwd
  std::vector<std::string> writable;  // host paths mounted read-write (typically <workspace>/kernels)
  std::vector<std::string> readable;  // extra host paths mounted read-only (tools, candidate libraries)
  bool gpu = false;                   // bind /dev/nvidia* (and /dev/dri) only when true
  SandboxLimits limits;
  std::string stdin_data;
};

struct SandboxResult {
  int exit_code = -1;  // the command's exit status; 128+N when signal N ended it
  int signal = 0;      // the signal that ended the command, when known
  bool timed_out = false;
  std::string out, err;
  std::string limit_hit;  // "wall", "cpu", "memory", "file size", "processes", "output"; "" when none is known
};

/// The uid that sandboxed commands run as when the caller is root: the kernel
/// never applies RLIMIT_NPROC to root, so root's sandboxes run as "nobody".
inline constexpr unsigned k_sandbox_uid = 65534;

/// Who runs the harness. A regular user's sandbox gets its own user namespace
/// (and may not make more); root's runs bwrap privileged and drops to
/// k_sandbox_uid with setpriv right before the command, because bwrap would
/// otherwise set up the mounts as that uid and fail on directories it cannot
/// enter.
enum class HostUser { regular, root };

/// The bubblewrap arguments for `spec` (paths as given, so absolute ones),
/// without the leading "bwrap". `setpriv` is the host path of setpriv(1), used
/// only for HostUser::root. Exposed for tests.
std::vector<std::string> bwrap_arguments(const SandboxSpec& spec, HostUser host_user, const std::string& setpriv = "");

/// Runs spec.argv in a bubblewrap sandbox and waits for it (at most
/// limits.wall_s, then kills it). The command's own failures (non-zero exit,
/// signals, limits, a command that does not exist: exit 127) are a
/// SandboxResult. Returns an error message only when the sandbox could not be
/// set up: bwrap missing, a path that does not exist, no user namespaces, or
/// an interrupt (SIGINT/SIGTERM, message "interrupted").
///
/// When the caller is root, the command runs as k_sandbox_uid in a user
/// namespace made here, and spec.writable is given to that uid (lchown, never
/// following symlinks) so that it can write there.
std::expected<SandboxResult, std::string> run_sandboxed(const SandboxSpec& spec);

}  // namespace ca
