// Runs a program without a shell, with a timeout, and captures its output.
#pragma once

#include <chrono>
#include <cstddef>
#include <expected>
#include <string>
#include <string_view>
#include <sys/types.h>
#include <vector>

namespace ca {

struct SubprocessOptions {
  std::string cwd;                       // "" = the caller's working directory
  std::vector<std::string> env;          // "NAME=value" entries that add to or override the caller's environment
  std::chrono::milliseconds timeout{0};  // 0 = wait for ever
  size_t max_output = 16 << 20;          // bytes kept of each stream; the rest is read and dropped
};

struct SubprocessResult {
  int exit_code = -1;        // the status passed to exit(), or -1 when a signal ended the program
  int signal = 0;            // the signal that ended the program, else 0
  bool timed_out = false;    // killed because the timeout passed
  bool interrupted = false;  // killed because this process received SIGINT or SIGTERM
  std::string out;
  std::string err;

  bool ok() const { return exit_code == 0 && signal == 0; }
  /// "exited with status 1", "killed by signal 11 (Segmentation fault)", "timed out" or "interrupted".
  std::string describe() const;
};

/// Runs argv[0] (searched on PATH when it has no '/') with stdin on /dev/null,
/// in a new process group. On timeout or interrupt the whole group gets SIGKILL;
/// when the program exits, processes it left behind in its group are killed too.
/// Returns an error message when the program cannot be started.
std::expected<SubprocessResult, std::string> run_subprocess(const std::vector<std::string>& argv,
                                                            const SubprocessOptions& options = {});

/// A program that stays up and answers requests: one line to its stdin, one line back on its stdout. Its stderr
/// is this process's. It runs in a new process group, which is killed when the Coprocess is destroyed unfinished.
class Coprocess {
 public:
  /// Starts argv[0] (searched on PATH when it has no '/'); options.timeout and max_output are not used.
  static std::expected<Coprocess, std::string> start(const std::vector<std::string>& argv, const SubprocessOptions& options = {});
  Coprocess(Coprocess&& other) noexcept;
  Coprocess& operator=(Coprocess&&) = delete;
  ~Coprocess();

  /// Writes `line` and a newline to its stdin; fails when it is gone.
  std::expected<void, std::string> send_line(std::string_view line);
  /// The next line of its stdout, without the newline. Fails when it ends first ("ca-x exited with status 1"),
  /// when `timeout` passes or on SIGINT/SIGTERM (it is killed then).
  std::expected<std::string, std::string> read_line(std::chrono::milliseconds timeout);
  /// Closes its stdin and waits up to `timeout` for it to exit, then kills its group; how it ended.
  SubprocessResult finish(std::chrono::milliseconds timeout);

 private:
  Coprocess(std::string name, pid_t pid, int in_fd, int out_fd) : m_name(std::move(name)), m_pid(pid), m_in(in_fd), m_out(out_fd) {}
  void kill_group();
  SubprocessResult reap();

  std::string m_name;  // argv[0], for messages
  pid_t m_pid = -1;    // -1 once reaped
  int m_in = -1, m_out = -1;
  std::string m_buffer;  // read past the last line returned
};

}  // namespace ca
