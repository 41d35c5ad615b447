#include "rollout/journal.h"

#include <fcntl.h>
#include <unistd.h>
#include <cerrno>
#include <cstring>

#include "util/atomic_file.h"

namespace ca {

Journal::Journal(std::string path, int fd) : m_path(std::move(path)), m_fd(fd) {}

Journal::Journal(Journal&& other) noexcept
    : m_path(std::move(other.m_path)),
      m_fd(std::exchange(other.m_fd, -1)),
      m_done(std::move(other.m_done)),
      m_mutex(std::move(other.m_mutex)) {}

Journal::~Journal() {
  if (m_fd > STDOUT_FILENO) ::close(m_fd);
}

std::expected<Journal, std::string> Journal::open(const std::string& path, bool resume) {
  if (path == "-") {
    if (resume) return std::unexpected("--resume needs an output file (-o), not standard output");
    return Journal(path, STDOUT_FILENO);
  }
  int fd = ::open(path.c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return std::unexpected(path + ": " + std::strerror(errno));
  Journal journal(path, fd);
  auto text = read_file(path);
  if (!text) return std::unexpected(text.error());
  if (!text->empty() && !resume)
    return std::unexpected(path + ": exists and is not empty; pass --resume to finish that run");
  // A kill mid-write leaves a last line without its newline: it is no record, and the next append must start a line.
  size_t whole = text->rfind('\n') == std::string::npos ? 0 : text->rfind('\n') + 1;
  if (whole < text->size() && ::ftruncate(fd, off_t(whole)) != 0)
    return std::unexpected(path + ": " + std::strerror(errno));
  size_t line = 0;
  for (size_t start = 0; start < whole;) {
    size_t end = text->find('\n', start);
    std::string row = text->substr(start, end - start);
    start = end + 1;
    ++line;
    if (row.find_first_not_of(" \t\r") == std::string::npos) continue;
    Json record = Json::parse(row, nullptr, false);
    if (!record.is_object()) return std::unexpected(path + ":" + std::to_string(line) + ": not a JSON object");
    auto task_id = record.find("task_id");
    auto sample = record.find("sample");
    if (record.value("kind", Json()) != "trajectory" || task_id == record.end() || !task_id->is_string() ||
        sample == record.end() || !sample->is_number_integer()) {
      continue;
    }
    journal.m_done.insert({task_id->get<std::string>(), sample->get<int>()});
  }
  return journal;
}

std::expected<void, std::string> Journal::append(const Json& record) {
  std::string line = record.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
  std::lock_guard lock(*m_mutex);
  // One write per record where the pipe or file allows, so a kill leaves at most the last line torn.
  for (size_t written = 0; written < line.size();) {
    ssize_t n = ::write(m_fd, line.data() + written, line.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      return std::unexpected(errno == EPIPE ? std::string("broken pipe") : m_path + ": " + std::strerror(errno));
    written += size_t(n);
  }
  // /dev/null and pipes cannot be synced (EINVAL); what they take is all there is.
  if (m_fd != STDOUT_FILENO && ::fdatasync(m_fd) != 0 && errno != EINVAL) {
    return std::unexpected(m_path + ": " + std::strerror(errno));
  }
  return {};
}

}  // namespace ca
