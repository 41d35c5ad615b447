// Runs one command isolated with bubblewrap (docs/EXPLOITS.md, §9; docs/EXPLOITS.md, A4, C4):
// no network, its own PID/IPC/UTS namespaces, a read-only view of the system
// directories and of the workspace, only the named paths writable, resource
// limits, and a wall-clock timeout that kills everything inside. Either to
// completion (run_sandboxed) or as a session of lines on stdin and stdout
// (SandboxSession), with the same supervision.
#pragma once

#include <cstdint>
#include <expected>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ca {

struct SandboxLimits {
  double wall_s = 60;                // enforced by the parent, which kills the sandbox
  double cpu_s = 60;                 // RLIMIT_CPU: per process, so the wall limit backs it up
  int64_t memory_bytes = 8LL << 30;  // RLIMIT_AS (RLIMIT_DATA with gpu, see run_sandboxed)
  int processes = 64;                // RLIMIT_NPROC: counts every process of the sandbox's user
  int64_t file_bytes = 256LL << 20;  // RLIMIT_FSIZE: the largest file the command may write
  /// The writable paths' total (SandboxSpec::writable: bytes allocated, and k_disk_entry_bytes for each entry), checked
  /// by the parent while the command runs, which kills the sandbox once the total passes it and has grown since the
  /// start (limit_hit "disk"); 0: no quota. Also the largest file (RLIMIT_FSIZE) when smaller than file_bytes.
  int64_t disk_bytes = 0;
  /// With gpu: the device memory the command's CUDA clients may pin on each device, enforced by the MPS server,
  /// outside the sandbox, when an MPS control daemon runs (its pipe directory, CUDA_MPS_PIPE_DIRECTORY or
  /// /tmp/nvidia-mps, is bound in and CUDA_MPS_PINNED_DEVICE_MEM_LIMIT set); 0: none. Without a daemon nothing
  /// enforces it (mps_pipe_directory says whether one is there). Untested on a GPU.
  int64_t device_memory_bytes = 0;
};

/// The address-space limit for each of `jobs` sandboxes that run at once: `limit`, or less, so that together they
/// hold at most three quarters of the host's physical memory (the rest is the trusted side's and the system's); never
/// below k_min_memory_share, which a runner needs to start.
int64_t host_memory_share(int64_t limit, int jobs);
inline constexpr int64_t k_min_memory_share = int64_t{512} << 20;

/// The MPS control daemon's pipe directory when one is running (its "control" pipe exists): CUDA_MPS_PIPE_DIRECTORY,
/// else /tmp/nvidia-mps; "" when there is none.
std::string mps_pipe_directory();

/// What each file, directory or link under a writable path counts toward SandboxLimits::disk_bytes besides its
/// allocated bytes: its inode and directory entry, so that a million empty files are not free.
inline constexpr int64_t k_disk_entry_bytes = 4096;

/// The bytes `paths` hold as SandboxLimits::disk_bytes counts them (without following symlinks, each inode once);
/// stops counting once past `stop_after` (> 0), so a tree far over a quota costs no more than the quota to walk.
int64_t disk_usage(const std::vector<std::string>& paths, int64_t stop_after = 0);

struct SandboxSpec {
  std::vector<std::string> argv;      // argv[0] is resolved on the sandbox's PATH
  std::string workdir;                // host directory mounted read-only at the same path; the cwd
  std::vector<std::string> writable;  // host paths mounted read-write (typically <workspace>/kernels)
  std::vector<std::string> readable;  // extra host paths mounted read-only (tools, candidate libraries)
  bool gpu = false;                   // bind /dev/nvidia* (and /dev/dri) only when true
  /// Cores the command may run on: the first `cpus` of the caller's own (sched_setaffinity before exec, inherited by
  /// everything inside); 0 or more than the caller has: the caller's.
  int cpus = 0;
  SandboxLimits limits;
  std::string stdin_data;
};

struct SandboxResult {
  int exit_code = -1;  // the command's exit status; 128+N when signal N ended it
  int signal = 0;      // the signal that ended the command, when known
  bool timed_out = false;
  std::string out, err;
  std::string limit_hit;  // "wall", "cpu", "memory", "file size", "disk", "processes", "output"; "" when none known
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

struct SandboxProcess;  // sandbox.cpp: a started sandbox and what its parent watches

/// A sandboxed command that stays up for a conversation of lines: the caller sends a line to its stdin, waits for a
/// line on its stdout, and so on, then finishes it. The sandbox, the rlimits (per process, so RLIMIT_CPU counts the
/// whole session), the output caps (32 MiB per stream of what is not taken as a line), SIGPIPE and interrupts are
/// those of run_sandboxed, which shares this code; only the wall clock differs: each wait and finish has its own
/// timeout, and limits.wall_s is not used. Destroying a session that was not finished kills it.
class SandboxSession {
 public:
  /// Starts spec.argv (spec.stdin_data is ignored) with a pipe for its stdin. Fails as run_sandboxed does when the
  /// sandbox cannot be set up.
  static std::expected<SandboxSession, std::string> start(const SandboxSpec& spec);
  SandboxSession(SandboxSession&&) noexcept;
  SandboxSession& operator=(SandboxSession&&) noexcept;
  ~SandboxSession();

  /// Queues `line` and a newline for the command's stdin; wait_line and finish write it. Dropped once the command
  /// closed its stdin or is gone.
  void send_line(std::string_view line);
  /// Waits until a whole line is on the command's stdout and returns it without its newline; nullopt when the
  /// command ended first, or when `timeout_s` passed: then everything in the sandbox is killed, as run_sandboxed
  /// does at its wall limit (finish's result has timed_out). Fails with "interrupted" on SIGINT/SIGTERM, after
  /// killing the sandbox. Text after the line stays for the next wait.
  std::expected<std::optional<std::string>, std::string> wait_line(double timeout_s);
  /// Stops every process in the sandbox (SIGSTOP, to bwrap and all its descendants) until resume(), so that
  /// nothing the command left running (a thread, a child) competes with the caller's own work meanwhile, and waits
  /// until every thread of it is stopped (at most 5 s), so that what the caller writes next for it is not seen before
  /// resume(). The wall clock is the caller's: nothing is timed while paused.
  void pause();
  /// Stops the command's own process, every thread of it, and waits until it is stopped (at most 5 s): pause()
  /// without the walk of the sandbox, cheap enough for every call of a runner (tens of microseconds). Only the
  /// command's process: the caller makes sure it has no other (the runner's seccomp filter forbids forks). False
  /// when there is no such process (it ended, or never started).
  bool freeze();
  /// Waits until the command's process, every thread of it, is stopped by a stop it raised itself (a runner holding at
  /// the edge of a call, runner/run_candidate.h), at most 5 s, and takes it as frozen: thaw() continues it. False when
  /// there is no such process (it ended, or never started).
  bool await_stop();
  /// The CPU time the command's process has used so far, every thread of it, those that ended included, as the
  /// kernel accounts it (clock_getcpuclockid), in microseconds; nullopt before freeze() found it or once it is gone.
  std::optional<double> command_cpu_us() const;
  /// Lets a frozen command run again (SIGCONT).
  void thaw();
  /// Lets a paused sandbox run again (SIGCONT to all of it); wait_line after pause needs it first.
  void resume();
  /// Closes stdin, waits for the command to end (at most `timeout_s`, then kills it) and returns what
  /// run_sandboxed would: exit code, signal, timed_out, limit_hit, stderr, and the stdout no wait_line took. Fails
  /// with "interrupted" when an interrupt stopped the session, or when the sandbox never ran the command. Ends the
  /// session: later calls fail.
  std::expected<SandboxResult, std::string> finish(double timeout_s);
  /// Whether the command may still be running (it has not been seen to end, be killed, or be finished).
  bool running() const;

 private:
  explicit SandboxSession(std::unique_ptr<SandboxProcess> process);
  std::unique_ptr<SandboxProcess> m_process;
};

}  // namespace ca
