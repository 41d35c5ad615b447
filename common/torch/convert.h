// JSON arguments of a task node converted by the types in the operator's
// schema: literals become IValues once, references are checked and resolved
// when the node runs.
#pragma once

#include <expected>
#include <string>
#include <unordered_map>
#include <vector>

#include "torch/interpreter.h"

namespace ca {

/// The values a node may refer to: inputs, params and earlier outputs.
struct ValueScope {
  std::unordered_map<std::string, int> index;
  std::vector<c10::TypePtr> types;
  int add(const std::string& name, c10::TypePtr type);
};

/// True when task programs can give an argument of this (schema) type.
bool is_supported_argument_type(const c10::TypePtr& type);

/// Binds one schema argument to its JSON value (`given`, or nullptr when the
/// node leaves it out). `path` names the JSON field in errors.
std::expected<ArgRecipe, std::string> bind_argument(const c10::Argument& argument, const Json* given,
                                                    const std::string& path, const ValueScope& scope);

}  // namespace ca
