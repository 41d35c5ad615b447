// An operator's schema as the composer reads it: each argument's name, kind and whether it may be left out, without
// LibTorch's types, so synth/ fills arguments without including the dispatcher.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ca {

/// What an argument takes, with its Optional[] and SymInt wrappers taken off (`optional` keeps the first).
enum class ArgKind {
  tensor,
  optional_tensor,    // Tensor?
  tensor_list,        // Tensor[]
  other_tensor_list,  // a list of anything else the composer has no rule for (Tensor?[], Scalar[]...)
  integer,            // int, SymInt
  int_list,           // int[], SymInt[]
  real,               // float
  real_list,          // float[]
  boolean,
  bool_list,
  scalar,       // Scalar (a number of any type)
  string,       // str
  scalar_type,  // ScalarType
  implicit      // MemoryFormat, Layout, Device, Generator...: left to their defaults or None
};

struct OpArgument {
  std::string name;
  ArgKind kind = ArgKind::implicit;
  bool optional = false;              // None is allowed
  bool has_default = false;           // the schema gives a default, so the argument may be left out
  bool kwarg_only = false;            // after `*` in the schema
  std::optional<int32_t> fixed_size;  // int[2]: a list of this length, which one value may stand for
  std::string type;                   // the type as LibTorch spells it ("int[]", "Tensor?"), for messages
};

struct OpSchema {
  std::vector<OpArgument> arguments;
};

/// The schema of the operator `name` ("aten::add") and `overload` ("Tensor", "" for the default) in LibTorch's
/// dispatcher; nullopt when it has no such operator.
std::optional<OpSchema> find_op_schema(std::string_view name, std::string_view overload);

}  // namespace ca
