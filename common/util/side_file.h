// Side files: records a tool reads whole before its main input (--tasks, --reference, ca-synth's op and module
// records). One policy for all of them, unlike the main input's records, which fail one at a time: a missing or
// unreadable file is no_input (66), a read error io_error (74), and a line that is not JSON, or a record the caller's
// check refuses, data_error (65), named FILE:LINE.
#pragma once

#include <expected>
#include <functional>
#include <string>
#include <vector>

#include "util/exit_codes.h"
#include "util/jsonl.h"

namespace ca {

struct SideFileError {
  ExitCode code;        // no_input, io_error or data_error
  std::string message;  // "file:line: what", or the file's own error
};

/// Checks one record of a side file; the error is reported as FILE:LINE: error.
using SideRecordCheck = std::function<std::expected<void, std::string>(const Json& record)>;

/// Every record of `path` ("-" is stdin), each accepted by `check` when one is given, in file order.
std::expected<std::vector<Record>, SideFileError> read_side_file(const std::string& path,
                                                                 const SideRecordCheck& check = nullptr);

/// Reports `error` as `ca-x: error: message` and returns its code.
ExitCode report_side_file_error(const SideFileError& error);

}  // namespace ca
