// Reading ca-synth's inputs: op records (`ca-crawl ops`) and module records
// (`ca-crawl modules`), checked field by field with file:line in errors.
#pragma once

#include <expected>
#include <string>
#include <vector>

#include "util/exit_codes.h"
#include "util/jsonl.h"

namespace ca {

struct InputError {
  ExitCode code;        // no_input (missing file), data_error or io_error
  std::string message;  // "file:line: field: what", or the file's own error
};

/// Every record of `path` ("-" is stdin); each must have kind `kind` ("op" or
/// "module") and that kind's fields: op: name, overload, category (strings)
/// and usable (bool); module: name and forward_source (strings).
std::expected<std::vector<Json>, InputError> read_input_records(const std::string& path, const std::string& kind);

}  // namespace ca
