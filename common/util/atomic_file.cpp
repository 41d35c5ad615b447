#include "util/atomic_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace ca {

std::expected<AtomicFile, std::string> AtomicFile::create(const std::string& path) {
  struct stat info;
  if (stat(path.c_str(), &info) == 0 && !S_ISREG(info.st_mode)) {
    FILE* stream = std::fopen(path.c_str(), "w");
    if (stream == nullptr) return std::unexpected(path + ": cannot open: " + std::strerror(errno));
    return AtomicFile(path, "", stream);
  }
  // The pid and the lock tell a later run whether the writer is still alive (remove_stale_temporaries).
  std::string temp = path + ".tmp-" + std::to_string(::getpid()) + "-XXXXXX";
  int fd = mkostemp(temp.data(), O_CLOEXEC);
  if (fd < 0) return std::unexpected(path + ": cannot create: " + std::strerror(errno));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int saved = errno;
    close(fd);
    unlink(temp.c_str());
    return std::unexpected(path + ": cannot lock " + temp + ": " + std::strerror(saved));
  }
  FILE* stream = fdopen(fd, "w");
  if (stream == nullptr) {
    close(fd);
    unlink(temp.c_str());
    return std::unexpected(path + ": cannot open: " + std::strerror(errno));
  }
  return AtomicFile(path, temp, stream);
}

AtomicFile::AtomicFile(std::string path, std::string temp_path, FILE* stream)
    : m_path(std::move(path)), m_temp_path(std::move(temp_path)), m_stream(stream) {}

AtomicFile::AtomicFile(AtomicFile&& other) noexcept
    : m_path(std::move(other.m_path)), m_temp_path(std::move(other.m_temp_path)), m_stream(other.m_stream) {
  other.m_stream = nullptr;
  other.m_temp_path.clear();
}

AtomicFile::~AtomicFile() {
  if (m_stream != nullptr) std::fclose(m_stream);
  if (!m_temp_path.empty()) unlink(m_temp_path.c_str());
}

std::expected<void, std::string> AtomicFile::commit() {
  bool failed = std::fflush(m_stream) != 0 || std::ferror(m_stream) != 0;
  failed = failed || (!m_temp_path.empty() && fsync(fileno(m_stream)) != 0);
  int saved_errno = errno;
  failed = std::fclose(m_stream) != 0 || failed;
  m_stream = nullptr;
  if (failed) return std::unexpected(m_path + ": writing output failed: " + std::strerror(saved_errno));
  if (m_temp_path.empty()) return {};
  if (std::rename(m_temp_path.c_str(), m_path.c_str()) != 0) {
    return std::unexpected(m_path + ": cannot rename into place: " + std::strerror(errno));
  }
  m_temp_path.clear();
  return {};
}

size_t remove_stale_temporaries(const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  const std::string prefix = target.filename().string() + ".tmp-";
  std::error_code failed;
  fs::directory_iterator entries(target.parent_path().empty() ? fs::path(".") : target.parent_path(), failed);
  if (failed) return 0;
  size_t removed = 0;
  for (const auto& entry : entries) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with(prefix)) continue;
    // "<pid>-XXXXXX": a name of another form (a temporary from before pids were in the name) has no owner to ask.
    const std::string rest = name.substr(prefix.size());
    size_t digits = 0;
    while (digits < rest.size() && rest[digits] >= '0' && rest[digits] <= '9') ++digits;
    if (digits == 0 || digits > 9 || rest.size() != digits + 7 || rest[digits] != '-') continue;
    const pid_t pid = pid_t(std::stol(rest.substr(0, digits)));
    // Alive, or another user's (EPERM): not stale. A reused pid keeps a stale file, never removes a live one.
    if (pid <= 0 || ::kill(pid, 0) == 0 || errno != ESRCH) continue;
    int fd = ::open(entry.path().c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) continue;
    struct stat info;
    if (::fstat(fd, &info) == 0 && S_ISREG(info.st_mode) && ::flock(fd, LOCK_EX | LOCK_NB) == 0 &&
        ::unlink(entry.path().c_str()) == 0)
      ++removed;
    ::close(fd);
  }
  return removed;
}

std::expected<void, std::string> write_file_atomic(const std::string& path, std::string_view contents) {
  auto file = AtomicFile::create(path);
  if (!file) return std::unexpected(file.error());
  std::fwrite(contents.data(), 1, contents.size(), file->stream());
  return file->commit();
}

namespace {

// Where a commit's rename lands: the folder resolved, the last name as given (a rename replaces a symlink, not what it
// points to); "" when the folder does not resolve (opening the output will fail and say so).
std::string rename_target(const std::string& path) {
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : path.substr(0, slash == 0 ? 1 : slash);
  char resolved[PATH_MAX];
  if (realpath(dir.c_str(), resolved) == nullptr) return "";
  return std::string(resolved) + "/" + (slash == std::string::npos ? path : path.substr(slash + 1));
}

}  // namespace

bool same_output_file(const std::string& a, const std::string& b) {
  if (a == "-" || b == "-") return a == b;
  struct stat info_a, info_b;
  const bool has_a = stat(a.c_str(), &info_a) == 0, has_b = stat(b.c_str(), &info_b) == 0;
  if ((has_a && !S_ISREG(info_a.st_mode)) || (has_b && !S_ISREG(info_b.st_mode))) return false;
  if (has_a && has_b && info_a.st_dev == info_b.st_dev && info_a.st_ino == info_b.st_ino) return true;
  const std::string target_a = rename_target(a);
  return target_a.empty() ? a == b : target_a == rename_target(b);
}

std::expected<std::string, std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::unexpected(path + ": cannot open: " + std::strerror(errno));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) return std::unexpected(path + ": read failed");
  return buffer.str();
}

}  // namespace ca
