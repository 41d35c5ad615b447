// The rollout's output file as a journal: every finished episode is appended
// and flushed at once, so a killed run loses only the episodes in flight, and
// --resume knows which (task_id, sample) pairs are done. Not a RecordJournal
// (util/journal.h), whose output appears only at the end beside a journal of
// its own: here the output itself grows as episodes end (ca-rollout(1)), in the
// order they end, also on standard output, so it shares only the line writing
// and the torn-line repair (append_journal_line, drop_torn_line).
#pragma once

#include <cstdio>
#include <expected>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>

#include "util/jsonl.h"

namespace ca {

class Journal {
 public:
  /// Opens `path` ("-": standard output, which cannot be resumed) for
  /// appending. Without `resume` a non-empty file is refused (a finished run
  /// is never overwritten). With it, the trajectories already there are read
  /// into done(), and a last line cut short by a kill is removed. A trajectory
  /// with an `error` (the harness, the policy's endpoint or the judge failed,
  /// not the kernel) is not done: its line is dropped from the file, so that
  /// the episode runs again and the file keeps one record per episode. Errors
  /// name the file (and line, for a record that is not JSON).
  static std::expected<Journal, std::string> open(const std::string& path, bool resume);
  Journal(Journal&& other) noexcept;
  Journal& operator=(Journal&&) = delete;
  ~Journal();

  /// (task_id, sample) of every trajectory found at open.
  const std::set<std::pair<std::string, int>>& done() const { return m_done; }
  /// Trajectories found at open with an error, dropped to be run again.
  size_t retried() const { return m_retried; }
  /// Appends `record` as one line and flushes it to the file. Thread-safe.
  /// Errors say why the write failed; a reader of stdout that went away is one too ("broken pipe").
  std::expected<void, std::string> append(const Json& record);

 private:
  Journal(std::string path, int fd);
  std::string m_path;
  int m_fd = -1;
  std::set<std::pair<std::string, int>> m_done;
  size_t m_retried = 0;
  std::unique_ptr<std::mutex> m_mutex = std::make_unique<std::mutex>();
};

}  // namespace ca
