#include "util/unix_socket.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/signals.h"

namespace ca {
namespace {

using Clock = std::chrono::steady_clock;

std::string system_error(const std::string& what) {
  return what + ": " + std::strerror(errno);
}

std::expected<sockaddr_un, std::string> address_of(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof address.sun_path) {
    return std::unexpected(path + ": a socket path must have 1 to " + std::to_string(sizeof address.sun_path - 1) +
                           " bytes");
  }
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  return address;
}

// Connects a new stream socket to `path`; the descriptor or the system's reason.
std::expected<int, std::string> connect_to(const std::string& path) {
  auto address = address_of(path);
  if (!address) return std::unexpected(address.error());
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return std::unexpected(system_error("socket"));
  while (::connect(fd, reinterpret_cast<const sockaddr*>(&*address), sizeof *address) != 0) {
    if (errno == EINTR && !interrupted()) continue;
    std::string reason = std::strerror(errno);
    ::close(fd);
    return std::unexpected(reason);
  }
  return fd;
}

// Waits until `fd` has `events`, polling in slices so that SIGINT/SIGTERM end the wait; false when `deadline`
// passed first. Errors: "interrupted" or the system's reason.
std::expected<bool, std::string> wait_for(int fd, short events, std::optional<Clock::time_point> deadline) {
  while (true) {
    if (interrupted()) return std::unexpected("interrupted");
    int slice = 100;
    if (deadline) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - Clock::now()).count();
      if (left <= 0) return false;
      slice = int(std::min<long long>(slice, left));
    }
    pollfd entry{fd, events, 0};
    int ready = ::poll(&entry, 1, slice);
    if (ready > 0) return true;
    if (ready < 0 && errno != EINTR) return std::unexpected(system_error("poll"));
  }
}

}  // namespace

std::expected<UnixListener, std::string> UnixListener::bind(const std::string& path) {
  auto address = address_of(path);
  if (!address) return std::unexpected(address.error());
  struct stat info {};
  if (::lstat(path.c_str(), &info) == 0) {
    if (!S_ISSOCK(info.st_mode)) return std::unexpected(path + ": exists and is not a socket");
    if (auto live = connect_to(path)) {
      ::close(*live);
      return std::unexpected(path + ": a server already listens there");
    }
    ::unlink(path.c_str());  // stale: its server is gone
  }
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return std::unexpected(system_error("socket"));
  // Private from the start: the socket file takes the umask's mode, so no other user ever sees it open.
  mode_t old_mask = ::umask(0077);
  int bound = ::bind(fd, reinterpret_cast<const sockaddr*>(&*address), sizeof *address);
  int bind_errno = errno;
  ::umask(old_mask);
  if (bound != 0 || ::listen(fd, 64) != 0) {
    errno = bound != 0 ? bind_errno : errno;
    std::string reason = system_error(path);
    ::close(fd);
    return std::unexpected(reason);
  }
  return UnixListener(fd, path);
}

UnixListener::~UnixListener() {
  if (m_fd < 0) return;
  ::close(m_fd);
  ::unlink(m_path.c_str());
}

std::expected<std::optional<int>, std::string> UnixListener::accept(std::chrono::milliseconds wait) {
  pollfd entry{m_fd, POLLIN, 0};
  int ready = ::poll(&entry, 1, int(wait.count()));
  if (ready < 0) {
    if (errno == EINTR) return std::nullopt;
    return std::unexpected(system_error("poll"));
  }
  if (ready == 0) return std::nullopt;
  int fd = ::accept4(m_fd, nullptr, nullptr, SOCK_CLOEXEC);
  if (fd < 0) {
    if (errno == EINTR || errno == EAGAIN || errno == ECONNABORTED) return std::nullopt;
    return std::unexpected(system_error("accept"));
  }
  return fd;
}

std::expected<std::string, std::string> read_line(int fd, size_t max_bytes, std::chrono::milliseconds timeout) {
  std::optional<Clock::time_point> deadline;
  if (timeout.count() > 0) deadline = Clock::now() + timeout;
  std::string line;
  char buffer[1 << 16];
  while (true) {
    auto ready = wait_for(fd, POLLIN, deadline);
    if (!ready) return std::unexpected(ready.error());
    if (!*ready) return std::unexpected("timed out");
    ssize_t got = ::read(fd, buffer, sizeof buffer);  // read, not recv: a pipe too (ca-judge serve's stdout)
    if (got < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return std::unexpected(system_error("read"));
    }
    if (got == 0) return std::unexpected("closed");
    const char* newline = static_cast<const char*>(std::memchr(buffer, '\n', size_t(got)));
    size_t take = newline != nullptr ? size_t(newline - buffer) : size_t(got);
    if (line.size() + take > max_bytes)
      return std::unexpected("too long (more than " + std::to_string(max_bytes) + " bytes)");
    line.append(buffer, take);
    if (newline != nullptr) return line;  // one line a connection: what follows it is not read
  }
}

std::expected<void, std::string> write_all(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    ssize_t wrote = ::send(fd, text.data() + done, text.size() - done, MSG_NOSIGNAL);
    if (wrote < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return std::unexpected(system_error("send"));
    }
    done += size_t(wrote);
  }
  return {};
}

std::expected<std::string, std::string> unix_request(const std::string& path, const std::string& line,
                                                     std::chrono::milliseconds timeout, size_t max_bytes) {
  auto fd = connect_to(path);
  if (!fd) return std::unexpected("cannot connect to " + path + ": " + fd.error());
  auto sent = write_all(*fd, line + "\n");
  std::expected<std::string, std::string> answer =
      sent ? read_line(*fd, max_bytes, timeout) : std::unexpected(sent.error());
  ::close(*fd);
  if (!answer && answer.error() == "closed") return std::unexpected(path + " closed the connection without an answer");
  if (!answer) return std::unexpected(path + ": " + answer.error());
  return answer;
}

}  // namespace ca
