// Runs a program without a shell, with a timeout, and captures its output.
#pragma once

#include <chrono>
#include <cstddef>
#include <expected>
#include <functional>
#include <string>
#include <vector>

namespace ca {

struct SubprocessOptions {
  std::string cwd;                       // "" = the caller's working directory
  std::vector<std::string> env;          // "NAME=value" entries that add to or override the caller's environment
  std::chrono::milliseconds timeout{0};  // 0 = wait for ever
  size_t max_output = 16 << 20;          // bytes kept of each stream; the rest is read and dropped
  // Given: each whole line of standard output (without its newline) as it arrives, not kept in `out` (the last line
  // too, when it has no newline). Called on the calling thread, between reads: it must return soon (queue the work).
  std::function<void(std::string line)> on_output_line;
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

}  // namespace ca
