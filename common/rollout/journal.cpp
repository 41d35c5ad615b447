#include "rollout/journal.h"

#include <fcntl.h>
#include <unistd.h>
#include <cerrno>
#include <cstring>

#include "util/atomic_file.h"
#include "util/journal.h"

namespace ca {

Journal::Journal(std::string path, int fd) : m_path(std::move(path)), m_fd(fd) {}

Journal::Journal(Journal&& other) noexcept
    : m_path(std::move(other.m_path)),
      m_fd(std::exchange(other.m_fd, -1)),
      m_done(std::move(other.m_done)),
      m_retried(other.m_retried),
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
  auto kept = drop_torn_line(fd, path, *text);
  if (!kept) return std::unexpected(kept.error());
  const size_t whole = *kept;
  std::string staying;  // the lines of the records that stay: all but the trajectories with an error
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
    bool trajectory = record.value("kind", Json()) == "trajectory" && task_id != record.end() && task_id->is_string() &&
                      sample != record.end() && sample->is_number_integer();
    if (trajectory && !record.value("error", Json()).is_null()) {
      ++journal.m_retried;
      continue;
    }
    staying += row + "\n";
    if (trajectory) journal.m_done.insert({task_id->get<std::string>(), sample->get<int>()});
  }
  if (journal.m_retried > 0) {
    // The file is replaced whole (a kill leaves the old one or the new one), then appended to as before.
    if (auto written = write_file_atomic(path, staying); !written) return std::unexpected(written.error());
    ::close(std::exchange(journal.m_fd, -1));
    journal.m_fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
    if (journal.m_fd < 0) return std::unexpected(path + ": " + std::strerror(errno));
  }
  return journal;
}

std::expected<void, std::string> Journal::append(const Json& record) {
  std::string line = record.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
  std::lock_guard lock(*m_mutex);
  return append_journal_line(m_fd, m_path, line);
}

}  // namespace ca
