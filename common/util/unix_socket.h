// Unix stream sockets carrying one line each way: a request line, then an answer line (ca-judge's protocol,
// docs/ARCHITECTURE.md). The socket file is made private to its owner (0600), so only the user who started the
// server can send it work.
#pragma once

#include <chrono>
#include <expected>
#include <optional>
#include <string>

namespace ca {

/// A listening socket bound to a path; the path is removed when this is destroyed.
class UnixListener {
 public:
  /// Binds `path`. A stale socket file (nothing answers on it) is replaced; a live one is an error ("a server
  /// already listens on PATH"), as is any other file there. Errors name the path and the system's reason.
  static std::expected<UnixListener, std::string> bind(const std::string& path);
  UnixListener(UnixListener&& other) noexcept : m_fd(other.m_fd), m_path(std::move(other.m_path)) { other.m_fd = -1; }
  UnixListener& operator=(UnixListener&&) = delete;
  ~UnixListener();

  /// Waits up to `wait` for a client; its connected descriptor (the caller closes it), nullopt when none came in
  /// time or a signal interrupted the wait, or an error.
  std::expected<std::optional<int>, std::string> accept(std::chrono::milliseconds wait);
  const std::string& path() const { return m_path; }

 private:
  UnixListener(int fd, std::string path) : m_fd(fd), m_path(std::move(path)) {}
  int m_fd = -1;
  std::string m_path;
};

/// Reads one line from `fd` (a socket or a pipe; without its '\n'): at most `max_bytes`, within `timeout` in all (0: no
/// limit). Errors: "closed" when the peer closed before a whole line, "too long", "timed out", "interrupted" (SIGINT or
/// SIGTERM, util/signals.h), or the system's reason.
std::expected<std::string, std::string> read_line(int fd, size_t max_bytes, std::chrono::milliseconds timeout);

/// Writes all of `text` to `fd` (MSG_NOSIGNAL: a closed peer is an error, not SIGPIPE).
std::expected<void, std::string> write_all(int fd, const std::string& text);

/// Connects to the server at `path`, sends `line` and a newline, and returns the server's one-line answer, waiting
/// at most `timeout` (0: no limit) and at most `max_bytes` for it. Errors say which step failed: "cannot connect to
/// PATH: ...", "PATH closed the connection without an answer", a timeout or an interrupt.
std::expected<std::string, std::string> unix_request(const std::string& path, const std::string& line,
                                                     std::chrono::milliseconds timeout,
                                                     size_t max_bytes = size_t(1) << 30);

}  // namespace ca
