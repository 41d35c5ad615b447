// Checks a hand-written `task` record and fills in what the IR implies:
// meta.fingerprint, meta.ops and meta.output_shapes (from shape inference).
#pragma once

#include <expected>
#include <string>

#include "util/jsonl.h"

namespace ca {

/// Validates record.program fully (structure, schemas, shapes) and returns the
/// record with `meta` completed; other fields pass through. Errors name the field.
std::expected<Json, std::string> check_task(const Json& record);

}  // namespace ca
