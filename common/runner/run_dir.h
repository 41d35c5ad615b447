// The directory of one runner invocation or session: its requests, its results and its output region. It lives in
// /dev/shm where there is room (run_files_dir), so one left behind holds RAM: the harness that made it holds an flock
// on its owner.lock for as long as it exists, and the next harness to make one under the same parent removes every
// directory whose lock it can take, that is, whose owner died without cleaning up (SIGKILL, the OOM killer).
#pragma once

#include <cstddef>
#include <expected>
#include <string>

namespace ca {

class RunDir {
 public:
  /// Removes the directories under `parent` that outlived their owners (sweep_run_dirs), then makes a new one,
  /// `parent`/ca-run-XXXXXX, mode 0755, with an empty io/ inside.
  static std::expected<RunDir, std::string> create(const std::string& parent);
  RunDir(RunDir&& other) noexcept;
  RunDir& operator=(RunDir&&) = delete;
  RunDir(const RunDir&) = delete;
  /// Removes the directory and everything in it, then lets go of the lock.
  ~RunDir();
  const std::string& path() const { return m_path; }
  /// The part the runner may write: path()/io.
  const std::string& io() const { return m_io; }

 private:
  RunDir(std::string path, int lock_fd);
  std::string m_path, m_io;
  int m_lock_fd = -1;
};

/// How long a run directory without an owner.lock (one being made, or left by a version before the lock) is left
/// alone, in seconds.
constexpr double k_unowned_run_dir_grace_s = 600;

/// Removes every ca-run-* directory under `parent` whose owner.lock no process holds, and every one without an
/// owner.lock older than k_unowned_run_dir_grace_s. Returns how many it removed.
size_t sweep_run_dirs(const std::string& parent);

}  // namespace ca
