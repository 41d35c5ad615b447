// The output side of every record-writing tool: records go to a file or
// stdout, a closed pipe ends the run quietly, and a file appears only when the
// run ended well enough to keep it (ok, or some records reported and skipped).
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "util/exit_codes.h"
#include "util/journal.h"
#include "util/jsonl.h"

namespace ca {

/// Writes one record; returns the code to stop with, or nullopt to go on.
/// A reader that stopped reading (`| head`) stops the run with ExitCode::ok;
/// a write error is reported and stops it with ExitCode::io_error.
std::optional<ExitCode> emit(JsonlWriter& writer, const Json& record);

/// Opens `path` ("-" for stdout), lets `produce` write to it, and commits the
/// output when `produce` returns ok or some_failed. Returns produce's code, or
/// ExitCode::io_error when opening or committing fails (reported).
ExitCode write_records(const std::string& path, const std::function<ExitCode(JsonlWriter&)>& produce);

/// write_records with a journal beside `path` (util/journal.h; none for stdout): `produce` journals every finished
/// record in it; once the output is committed the journal is removed. An open that fails (a resume of another run,
/// a journal left without --resume) is reported and returned as its code.
ExitCode write_journaled_records(const std::string& path, const JournalOptions& journal,
                                 const std::function<ExitCode(JsonlWriter&, RecordJournal*)>& produce);

/// Opens the journal of `output` for a tool with outputs of its own; reports a failure. nullopt inside: no journal.
std::expected<std::optional<RecordJournal>, ExitCode> open_journal(const std::string& output,
                                                                   const JournalOptions& options);

/// Removes a finished run's journal (none: nothing), reporting a failure; returns `code`, or io_error.
ExitCode finish_journal(std::optional<RecordJournal>& journal, ExitCode code);

}  // namespace ca
