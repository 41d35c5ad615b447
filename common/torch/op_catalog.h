// The operator catalogue behind `ca-crawl ops`: one `op` record per operator
// in LibTorch's dispatcher, classified and marked usable or not for tasks.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/jsonl.h"

namespace ca {

/// Whether the operator written "ns::name.overload" draws random numbers as tasks call it: tagged
/// nondeterministic_seeded, unless only through a dropout argument that defaults to 0 (the attention ops). False for
/// an operator LibTorch's dispatcher does not know.
bool seeded_random(std::string_view qualified);

/// Every registered operator, sorted by name then overload, as records
/// {kind:"op", name, overload, schema, category, tags, deterministic, usable,
/// why_unusable?}. The rules are in docs/OPS.md.
std::vector<Json> crawl_ops();

/// The category (docs/OPS.md) of the operator written "ns::name.overload" ("ns::name" for the default overload) as
/// a task node names it; nullopt when LibTorch's dispatcher has no such operator.
std::optional<std::string> op_category(std::string_view qualified);

/// A table of op records per category: category, ops, usable; then a total row.
std::string summarize_ops(const std::vector<Json>& ops);

}  // namespace ca
