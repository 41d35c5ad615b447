// Reading ca-synth's inputs: op records (`ca-crawl ops`) and module records
// (`ca-crawl modules`), checked field by field with file:line in errors.
#pragma once

#include <expected>
#include <string>
#include <vector>

#include "util/jsonl.h"
#include "util/side_file.h"

namespace ca {

/// Every record of `path` ("-" is stdin); each must have kind `kind` ("op" or
/// "module") and that kind's fields: op: name, overload, category (strings)
/// and usable (bool); module: name and forward_source (strings). A side file (util/side_file.h): the first bad line
/// ends the run.
std::expected<std::vector<Json>, SideFileError> read_input_records(const std::string& path, const std::string& kind);

}  // namespace ca
