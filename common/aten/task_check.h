// Checks a hand-written `task` record and fills in what the IR implies:
// meta.fingerprint, meta.ops and meta.output_shapes (from shape inference).
#pragma once

#include <expected>
#include <string>

#include <ATen/ATen.h>

#include "util/jsonl.h"

namespace ca {

/// Validates record.program fully (structure, param files, schemas, shapes) and returns the
/// record with `meta` completed; other fields pass through. Errors name the field.
/// Nodes without a meta kernel are shape-checked on `fallback` (Interpreter::infer_shapes).
std::expected<Json, std::string> check_task(const Json& record, const at::Device& fallback = at::kCPU);

}  // namespace ca
