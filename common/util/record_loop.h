// The loop at the heart of every record-transforming tool: read records from
// files or stdin, transform each, write the results, report bad ones as
// file:line and go on (STYLE 8).
#pragma once

#include <expected>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "util/exit_codes.h"
#include "util/journal.h"
#include "util/jsonl.h"

namespace ca {

enum class OnBadRecord { skip, stop };

using Transform = std::function<std::expected<Json, std::string>(const Json& record)>;

/// Reads every record of `inputs` ("-" is stdin), writes transform(record) for
/// each, and reports invalid JSON or a transform error as `file:line: message`.
/// With OnBadRecord::skip the run goes on and ends with some_failed; with
/// ::stop it ends at once with data_error. Returns ok when all went through,
/// no_input for a missing file, io_error, interrupted, or ok after the reader
/// of stdout went away. An exception from `transform` fails that record only
/// (util/exceptions.h). With `jobs` > 1, up to that many records are
/// transformed at once on threads of their own (`transform` must allow it);
/// results are still written, and errors reported, in input order. With a `journal` (util/journal.h), every
/// finished record (its output, or its error) is journaled before it is written, and a record the journal holds is
/// written from it, not transformed again.
ExitCode transform_records(const std::vector<std::string>& inputs, JsonlWriter& writer, OnBadRecord on_bad,
                           const Transform& transform, unsigned jobs = 1, RecordJournal* journal = nullptr);

/// What a visitor did with one record: an error message (reported as `file:line: message`, then on_bad decides), or
/// an exit code that ends the run at once (a failed write), or nothing.
using Visit = std::function<std::expected<std::optional<ExitCode>, std::string>(const Record& record)>;

/// The loop under transform_records, for tools that send records to more than one place (ca-filter's kept and
/// rejected): calls `visit` for every valid record; invalid JSON, and an exception from `visit`, are reported like a
/// visitor's error. `reported`, when
/// given, counts the records reported as bad.
ExitCode visit_records(const std::vector<std::string>& inputs, OnBadRecord on_bad, const Visit& visit,
                       size_t* reported = nullptr);

/// What a record gives in a journaled run, computed (ComputeEntry) or replayed from the journal, then sent to the
/// run's outputs (EmitEntry: nullopt to go on, or the code to stop with).
using ComputeEntry = std::function<std::expected<JournalEntry, std::string>(const Record& record)>;
using EmitEntry = std::function<std::optional<ExitCode>(const JournalEntry& entry)>;

/// One record of a visitor with a journal (nullptr: none): the entry the journal holds for `record`, or else
/// compute(record), journaled (an error too, unless SIGINT or SIGTERM cut it short), is emitted or returned as the
/// record's error. An input record that differs from the one journaled at its place ends the run (usage).
std::expected<std::optional<ExitCode>, std::string> journaled_visit(RecordJournal* journal, const Record& record,
                                                                    const ComputeEntry& compute,
                                                                    const EmitEntry& emit_entry);

}  // namespace ca
