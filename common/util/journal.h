// The journal of a long run (docs/RECORDS.md, "Journals and --resume"): every
// finished input record's outputs are appended to <output>.journal and synced
// at once, so a run cut short keeps them, and `--resume` replays them instead of
// computing them again. The outputs themselves still appear atomically, when
// the run completes; the journal is removed then.
#pragma once

#include <expected>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "util/exit_codes.h"
#include "util/jsonl.h"

namespace ca {

/// What names a run, for its journal's header: a resume must be the same run.
struct JournalOptions {
  bool resume = false;
  std::string tool;                 // "ca-filter", "ca-crawl tasks"
  Json flags = Json::object();      // every flag that shapes the records, as given or by default
  std::vector<std::string> inputs;  // files the records come from; the SHA-256 of each regular one goes in the header
};

/// What one input record gave: records for the run's outputs (0: -o, 1: the tool's second output, such as
/// ca-filter's --rejects), or the error it was reported with.
struct JournalEntry {
  std::vector<std::pair<int, Json>> out;
  std::optional<std::string> error;
};

/// A journal error with the exit code it ends the run with (usage for a resume of another run, io_error).
struct JournalError {
  ExitCode code;
  std::string message;
};

class RecordJournal {
 public:
  /// The journal of output `path`: "<path>.journal".
  static std::string path_for(const std::string& output);

  /// Opens the journal of `output`. Without options.resume, a journal already there is refused (it holds a cut-short
  /// run's work); with it, its entries are read (a last line torn by a kill is dropped) and its header must name the
  /// same tool, flags and inputs, else the resume is refused with what differs. With no journal there, a resume
  /// starts from the beginning. Returns nullopt for an output that is not a file ("-", /dev/null), which keeps no
  /// journal (and so cannot be resumed: a usage error with options.resume).
  static std::expected<std::optional<RecordJournal>, JournalError> open(const std::string& output,
                                                                        const JournalOptions& options);
  RecordJournal(RecordJournal&& other) noexcept;
  RecordJournal& operator=(RecordJournal&&) = delete;
  ~RecordJournal();

  /// The entry journaled under `key` (an input record's position, "input:line"), or nullptr when there is none. An
  /// entry whose input digest differs is an error ("--resume: ..."): the input changed under the journal.
  std::expected<const JournalEntry*, std::string> find(const std::string& key, const std::string& digest) const;
  /// Appends `entry` under `key` and syncs it to disk. Called from one thread at a time. With CA_JOURNAL_KILL_AFTER=K
  /// in the environment the process kills itself with SIGKILL once it has appended K entries: how tests cut short,
  /// at a state, a run that has no input to hold it at (tests/cli/resume_synth.sh).
  std::expected<void, std::string> append(const std::string& key, const std::string& digest, const JournalEntry& entry);
  /// Removes the journal: the run's outputs are committed.
  std::expected<void, std::string> finish();

  const std::string& path() const { return m_path; }
  /// Entries read at open (a resume's finished records), and their keys.
  size_t resumed() const { return m_entries.size(); }
  std::vector<std::string> keys() const;

 private:
  RecordJournal(std::string path, int fd);
  std::string m_path;
  int m_fd = -1;
  size_t m_appended = 0;                                                  // entries this process appended
  std::map<std::string, std::pair<std::string, JournalEntry>> m_entries;  // key -> (digest, entry)
};

/// Appends `line` (ending in a newline) to the journal open as `fd` in full, retrying short writes, and syncs it, so
/// that a kill tears at most that line and a power cut loses none before it (a pipe or /dev/null, which cannot be
/// synced, is not). Errors name `path`; a reader of a pipe that went away is "broken pipe". For RecordJournal and
/// ca-rollout's trajectory file, whose output is its own journal (rollout/journal.h).
std::expected<void, std::string> append_journal_line(int fd, const std::string& path, const std::string& line);
/// The length of the whole lines of `text`, the contents of the journal open as `fd` (with O_APPEND): a last line a
/// kill tore (no newline) is no entry, and is cut off the file so that the next append starts a line.
std::expected<size_t, std::string> drop_torn_line(int fd, const std::string& path, const std::string& text);

/// The key of an input record in a journal: its input file's index among the run's inputs and its line.
std::string journal_key(const Record& record);
/// The digest of an input record's value, which its journal entry must match on resume.
std::string journal_digest(const Json& value);

}  // namespace ca
