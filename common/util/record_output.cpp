#include "util/record_output.h"

#include "util/cli.h"
#include "util/log.h"

namespace ca {

std::optional<ExitCode> emit(JsonlWriter& writer, const Json& record) {
  switch (writer.write(record)) {
    case JsonlWriter::Status::ok:
      return std::nullopt;
    case JsonlWriter::Status::broken_pipe:
      return ExitCode::ok;
    case JsonlWriter::Status::io_error:
      error("writing output failed");
      return ExitCode::io_error;
  }
  return ExitCode::io_error;
}

ExitCode write_records(const std::string& path, const std::function<ExitCode(JsonlWriter&)>& produce) {
  auto writer = JsonlWriter::open(path);
  if (!writer) {
    error(writer.error());
    return ExitCode::io_error;
  }
  ExitCode code = produce(*writer);
  if (code != ExitCode::ok && code != ExitCode::some_failed) return code;
  if (auto committed = writer->commit(); !committed) {
    error(committed.error());
    return ExitCode::io_error;
  }
  return code;
}

std::expected<std::optional<RecordJournal>, ExitCode> open_journal(const std::string& output,
                                                                   const JournalOptions& options) {
  auto journal = RecordJournal::open(output, options);
  if (!journal) {
    if (journal.error().code == ExitCode::usage) return std::unexpected(usage_error(journal.error().message));
    error(journal.error().message);
    return std::unexpected(journal.error().code);
  }
  if (*journal && (*journal)->resumed() > 0)
    note("resuming: " + std::to_string((*journal)->resumed()) + " finished records in " + (*journal)->path());
  return std::move(*journal);
}

ExitCode finish_journal(std::optional<RecordJournal>& journal, ExitCode code) {
  if (!journal) return code;
  if (auto finished = journal->finish(); !finished) {
    error(finished.error());
    return ExitCode::io_error;
  }
  return code;
}

ExitCode write_journaled_records(const std::string& path, const JournalOptions& options,
                                 const std::function<ExitCode(JsonlWriter&, RecordJournal*)>& produce) {
  auto journal = open_journal(path, options);
  if (!journal) return journal.error();
  RecordJournal* kept = *journal ? &**journal : nullptr;
  ExitCode code = write_records(path, [&](JsonlWriter& writer) { return produce(writer, kept); });
  if (code != ExitCode::ok && code != ExitCode::some_failed) return code;
  return finish_journal(*journal, code);
}

}  // namespace ca
