// Binds a node's args and kwargs to the argument names of an ATen schema string, with the schema's defaults, so the
// kernel writer reads `negative_slope` and `keepdim` by name without LibTorch.
#pragma once

#include <expected>
#include <string>
#include <string_view>

#include "ir/program.h"
#include "util/jsonl.h"

namespace ca {

/// Returns {name: value} for every argument of `schema` (e.g. "aten::leaky_relu(Tensor self, Scalar
/// negative_slope=0.01) -> Tensor"): the node's positional args in order, then its kwargs, then the schema's defaults
/// (None as null, lists as arrays). Errors name the argument: too many args, an unknown kwarg, a missing argument.
std::expected<Json, std::string> bind_schema(std::string_view schema, const Node& node);

}  // namespace ca
