// ca-rollout --judge auto: a warm judge (ca-judge serve) started as a child of this process for its episodes'
// verify and profile calls, and stopped with it.
#pragma once

#include <sys/types.h>

#include <expected>
#include <string>

namespace ca {

class JudgeChild {
 public:
  /// Starts `bin_dir`/ca-judge -j `jobs` serve (verifies `jobs` at once: one an episode running at once) on a socket
  /// in a new private directory under the temporary directory and waits (at most `wait_s`) until it listens.
  /// Errors: it cannot start, it exited first, or it did not listen in time.
  static std::expected<JudgeChild, std::string> start(const std::string& bin_dir, unsigned jobs, double wait_s);
  JudgeChild(JudgeChild&& other) noexcept;
  JudgeChild& operator=(JudgeChild&&) = delete;
  /// Stops the judge (SIGTERM, then SIGKILL after 10 s), waits for it and removes its directory.
  ~JudgeChild();
  const std::string& socket() const { return m_socket; }

 private:
  JudgeChild(pid_t pid, int out_fd, std::string dir, std::string socket)
      : m_pid(pid), m_out(out_fd), m_dir(std::move(dir)), m_socket(std::move(socket)) {}
  pid_t m_pid = -1;
  int m_out = -1;  // the read end of its stdout, kept open so that it never writes to a closed pipe
  std::string m_dir, m_socket;
};

}  // namespace ca
