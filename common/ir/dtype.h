// Element types a task may use, named as torch names them ("float32", ...).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ca {

enum class DType { float32, float64, float16, bfloat16, int64, int32, int16, int8, uint8, boolean };

/// Accepts "float32" and the aliases torch accepts ("float", "half", "long", "bool", ...).
std::optional<DType> parse_dtype(std::string_view name);
/// The canonical name: "float32", "int64", "bool", ...
std::string_view dtype_name(DType dtype);
/// Canonical names of every dtype, for "must be one of" messages.
std::vector<std::string> dtype_names();
size_t dtype_size(DType dtype);
bool is_floating(DType dtype);

}  // namespace ca
