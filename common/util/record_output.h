// The output side of every record-writing tool: records go to a file or
// stdout, a closed pipe ends the run quietly, and a file appears only when the
// run ended well enough to keep it (ok, or some records reported and skipped).
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "util/exit_codes.h"
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

}  // namespace ca
