// Run directories that a harness killed mid-run does not leave behind for good (see run_dir.h).
#include "runner/run_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <utility>

#include "util/remove_tree.h"

namespace ca {
namespace {

constexpr char k_prefix[] = "ca-run-";
constexpr char k_lock[] = "owner.lock";

// Whether the directory `path` outlived its owner. The lock is taken and then dropped: removing the directory
// afterwards races with nothing, since an owner never comes back.
bool abandoned(const std::string& path) {
  int fd = ::open((path + "/" + k_lock).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    struct stat status {};
    // Without a lock file: being made right now (the lock goes in by rename), or older than the lock.
    return errno == ENOENT && ::lstat(path.c_str(), &status) == 0 &&
           std::difftime(std::time(nullptr), status.st_mtime) > k_unowned_run_dir_grace_s;
  }
  bool free = ::flock(fd, LOCK_EX | LOCK_NB) == 0;
  ::close(fd);
  return free;
}

}  // namespace

size_t sweep_run_dirs(const std::string& parent) {
  DIR* dir = ::opendir(parent.c_str());
  if (dir == nullptr) return 0;
  size_t removed = 0;
  while (const dirent* entry = ::readdir(dir)) {
    if (std::strncmp(entry->d_name, k_prefix, sizeof k_prefix - 1) != 0) continue;
    std::string path = parent + "/" + entry->d_name;
    struct stat status {};
    // Only directories of this user: another user's cannot be removed, and are none of ours.
    if (::lstat(path.c_str(), &status) != 0 || !S_ISDIR(status.st_mode) || status.st_uid != ::geteuid()) continue;
    if (abandoned(path) && remove_tree(path)) ++removed;
  }
  ::closedir(dir);
  return removed;
}

RunDir::RunDir(std::string path, int lock_fd) : m_path(std::move(path)), m_io(m_path + "/io"), m_lock_fd(lock_fd) {}

RunDir::RunDir(RunDir&& other) noexcept
    : m_path(std::exchange(other.m_path, "")),
      m_io(std::move(other.m_io)),
      m_lock_fd(std::exchange(other.m_lock_fd, -1)) {}

RunDir::~RunDir() {
  if (!m_path.empty()) remove_tree(m_path);
  if (m_lock_fd >= 0) ::close(m_lock_fd);
}

std::expected<RunDir, std::string> RunDir::create(const std::string& parent) {
  sweep_run_dirs(parent);
  std::string path = parent + "/" + k_prefix + "XXXXXX";
  if (::mkdtemp(path.data()) == nullptr) {
    return std::unexpected("cannot create a run directory under " + parent + ": " + std::strerror(errno));
  }
  // Owns the directory from here: an error below removes it.
  std::string temp = path + "/.owner.lock";
  int fd = ::open(temp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  RunDir run_dir(path, fd);
  // Locked before it gets its name, so no sweep ever finds the lock file unheld while its owner lives.
  if (fd < 0 || ::flock(fd, LOCK_EX) != 0 || ::rename(temp.c_str(), (path + "/" + k_lock).c_str()) != 0 ||
      ::chmod(path.c_str(), 0755) != 0 || ::mkdir(run_dir.io().c_str(), 0755) != 0) {
    return std::unexpected("cannot set up the run directory " + path + ": " + std::strerror(errno));
  }
  return run_dir;
}

}  // namespace ca
