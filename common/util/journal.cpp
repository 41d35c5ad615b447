#include "util/journal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>

#include "util/atomic_file.h"
#include "util/sha256.h"

namespace ca {
namespace {

constexpr int k_journal_version = 1;

std::unexpected<JournalError> fail(ExitCode code, std::string message) {
  return std::unexpected(JournalError{code, std::move(message)});
}

// The header names the run: a resume with another tool, flag or input would mix two runs' records in one output.
std::expected<Json, JournalError> header_of(const JournalOptions& options) {
  Json inputs = Json::array();
  for (const auto& path : options.inputs) {
    // Standard input and pipes (`<(cmd)`) can be read once, by the run: their records are checked one by one instead.
    struct stat info;
    if (path == "-" || (::stat(path.c_str(), &info) == 0 && !S_ISREG(info.st_mode))) {
      inputs.push_back({{"path", path}});
      continue;
    }
    auto text = read_file(path);
    if (!text) return fail(ExitCode::no_input, text.error());
    inputs.push_back({{"path", path}, {"sha256", sha256_hex(*text)}});
  }
  return Json{{"kind", "journal"},
              {"version", k_journal_version},
              {"tool", options.tool},
              {"flags", options.flags},
              {"inputs", inputs}};
}

// What differs between the journal's run and this one, for the refusal: the first flag or input that does.
std::string difference(const Json& journaled, const Json& now) {
  if (journaled.value("version", 0) != k_journal_version) return "it was written by another version of the journal";
  if (journaled.value("tool", std::string()) != now.value("tool", std::string()))
    return "it is of " + journaled.value("tool", std::string("?"));
  const Json& flags = journaled.contains("flags") ? journaled["flags"] : Json::object();
  for (const auto& [name, value] : now["flags"].items()) {
    Json before = flags.contains(name) ? flags[name] : Json();
    if (before != value) return name + " was " + before.dump() + ", now " + value.dump();
  }
  for (const auto& [name, value] : flags.items()) {
    if (!now["flags"].contains(name)) return name + " was " + value.dump() + ", now not given";
  }
  if (journaled.value("inputs", Json()) != now["inputs"]) {
    const Json& before = journaled.value("inputs", Json::array());
    for (size_t i = 0; i < now["inputs"].size(); ++i) {
      if (i >= before.size() || before[i].value("path", std::string()) != now["inputs"][i].value("path", std::string()))
        return "its inputs were other files";
      if (before[i] != now["inputs"][i]) return "input " + now["inputs"][i].value("path", "") + " changed since";
    }
    return "its inputs were other files";
  }
  return "";
}

std::expected<void, std::string> write_line(int fd, const std::string& path, const Json& value) {
  return append_journal_line(fd, path, value.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n");
}

}  // namespace

std::expected<void, std::string> append_journal_line(int fd, const std::string& path, const std::string& line) {
  // One write where the file or pipe allows, so that a kill leaves at most the last line torn.
  for (size_t written = 0; written < line.size();) {
    ssize_t n = ::write(fd, line.data() + written, line.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::unexpected(errno == EPIPE ? std::string("broken pipe") : path + ": " + std::strerror(errno));
    written += size_t(n);
  }
  // Synced per line: a record the journal holds survives a kill or a power cut. Pipes and /dev/null cannot be synced
  // (EINVAL); what they took is all there is.
  if (::fdatasync(fd) != 0 && errno != EINVAL) return std::unexpected(path + ": " + std::strerror(errno));
  return {};
}

std::expected<size_t, std::string> drop_torn_line(int fd, const std::string& path, const std::string& text) {
  // A kill mid-write leaves a last line without its newline: it is no entry, and the next append must start a line.
  size_t whole = text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;
  if (whole < text.size() && ::ftruncate(fd, off_t(whole)) != 0)
    return std::unexpected(path + ": " + std::strerror(errno));
  return whole;
}

std::string RecordJournal::path_for(const std::string& output) {
  return output + ".journal";
}

RecordJournal::RecordJournal(std::string path, int fd) : m_path(std::move(path)), m_fd(fd) {}

RecordJournal::RecordJournal(RecordJournal&& other) noexcept
    : m_path(std::move(other.m_path)),
      m_fd(std::exchange(other.m_fd, -1)),
      m_appended(other.m_appended),
      m_entries(std::move(other.m_entries)) {}

RecordJournal::~RecordJournal() {
  if (m_fd >= 0) ::close(m_fd);
}

std::expected<std::optional<RecordJournal>, JournalError> RecordJournal::open(const std::string& output,
                                                                              const JournalOptions& options) {
  struct stat info;
  // Standard output streams each record as it is done, and a device (/dev/null) is written in place: no journal.
  if (output == "-" || (::stat(output.c_str(), &info) == 0 && !S_ISREG(info.st_mode))) {
    if (options.resume)
      return fail(ExitCode::usage, "--resume needs an output file (-o FILE) beside which the run keeps its journal");
    return std::optional<RecordJournal>();
  }
  auto header = header_of(options);
  if (!header) return std::unexpected(header.error());
  const std::string path = path_for(output);
  std::optional<std::string> text;
  if (::access(path.c_str(), F_OK) == 0) {
    if (!options.resume)
      return fail(ExitCode::usage, path +
                                       ": a run cut short left its finished records here; pass --resume to carry on "
                                       "from them, or remove the file to start over");
    auto read = read_file(path);
    if (!read) return fail(ExitCode::io_error, read.error());
    text = std::move(*read);
  }
  int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return fail(ExitCode::io_error, path + ": " + std::strerror(errno));
  RecordJournal journal(path, fd);
  auto kept = drop_torn_line(fd, path, text.value_or(""));
  if (!kept) return fail(ExitCode::io_error, kept.error());
  const size_t whole = *kept;
  if (whole == 0) {  // none there, or a header a kill tore: the journal starts anew
    if (auto written = write_line(fd, path, *header); !written) return fail(ExitCode::io_error, written.error());
    return std::optional<RecordJournal>(std::move(journal));
  }
  size_t line = 0;
  for (size_t start = 0; start < whole;) {
    size_t end = text->find('\n', start);
    auto row = parse_json(text->substr(start, end - start));
    start = end + 1;
    ++line;
    const std::string where = path + ":" + std::to_string(line) + ": ";
    if (!row || !row->is_object()) return fail(ExitCode::data_error, where + "not a journal line");
    if (line == 1) {
      if (row->value("kind", "") != "journal") return fail(ExitCode::data_error, where + "not a journal's header");
      if (auto why = difference(*row, *header); !why.empty())
        return fail(ExitCode::usage, "--resume: " + path + " is of another run (" + why +
                                         "); resume with the same flags and inputs, or remove it to start over");
      continue;
    }
    const Json& key = (*row)["key"];
    const Json& digest = (*row)["sha256"];
    if (!key.is_string() || !digest.is_string()) return fail(ExitCode::data_error, where + "an entry without its key");
    JournalEntry entry;
    if (row->contains("error") && (*row)["error"].is_string()) entry.error = (*row)["error"].get<std::string>();
    for (const auto& out : row->value("out", Json::array())) {
      if (!out.is_array() || out.size() != 2 || !out[0].is_number_integer())
        return fail(ExitCode::data_error, where + "an entry's output is not [stream, record]");
      entry.out.emplace_back(out[0].get<int>(), out[1]);
    }
    journal.m_entries[key.get<std::string>()] = {digest.get<std::string>(), std::move(entry)};
  }
  return std::optional<RecordJournal>(std::move(journal));
}

std::expected<const JournalEntry*, std::string> RecordJournal::find(const std::string& key,
                                                                    const std::string& digest) const {
  auto it = m_entries.find(key);
  if (it == m_entries.end()) return nullptr;
  if (it->second.first != digest)
    return std::unexpected("--resume: this record differs from the one " + m_path +
                           " journaled here; resume with the same inputs, or remove the journal to start over");
  return &it->second.second;
}

std::expected<void, std::string> RecordJournal::append(const std::string& key, const std::string& digest,
                                                       const JournalEntry& entry) {
  Json line = {{"key", key}, {"sha256", digest}};
  if (entry.error) line["error"] = *entry.error;
  Json out = Json::array();
  for (const auto& [stream, record] : entry.out) out.push_back(Json::array({stream, record}));
  line["out"] = std::move(out);
  auto written = write_line(m_fd, m_path, line);
  // The kill point of the resume tests for runs with no input to hold them at (ca-synth): a real SIGKILL, at a state.
  static const long kill_after = [] {
    const char* value = std::getenv("CA_JOURNAL_KILL_AFTER");
    return value != nullptr ? std::strtol(value, nullptr, 10) : 0L;
  }();
  if (written && kill_after > 0 && ++m_appended >= size_t(kill_after)) ::raise(SIGKILL);
  return written;
}

std::expected<void, std::string> RecordJournal::finish() {
  if (m_fd >= 0) ::close(std::exchange(m_fd, -1));
  if (::unlink(m_path.c_str()) != 0 && errno != ENOENT) return std::unexpected(m_path + ": " + std::strerror(errno));
  return {};
}

std::vector<std::string> RecordJournal::keys() const {
  std::vector<std::string> keys;
  for (const auto& [key, entry] : m_entries) keys.push_back(key);
  return keys;
}

std::string journal_key(const Record& record) {
  return std::to_string(record.input) + ":" + std::to_string(record.line);
}

std::string journal_digest(const Json& value) {
  return sha256_hex(value.dump(-1, ' ', false, Json::error_handler_t::replace));
}

}  // namespace ca
