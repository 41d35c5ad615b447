#include "ir/dtype.h"

#include <array>
#include <utility>

namespace ca {
namespace {

struct DTypeInfo {
  DType dtype;
  std::string_view name;
  size_t size;
};

constexpr std::array<DTypeInfo, 10> k_dtypes = {{
    {DType::float32, "float32", 4},
    {DType::float64, "float64", 8},
    {DType::float16, "float16", 2},
    {DType::bfloat16, "bfloat16", 2},
    {DType::int64, "int64", 8},
    {DType::int32, "int32", 4},
    {DType::int16, "int16", 2},
    {DType::int8, "int8", 1},
    {DType::uint8, "uint8", 1},
    {DType::boolean, "bool", 1},
}};

constexpr std::array<std::pair<std::string_view, DType>, 7> k_aliases = {{
    {"float", DType::float32},
    {"double", DType::float64},
    {"half", DType::float16},
    {"long", DType::int64},
    {"int", DType::int32},
    {"short", DType::int16},
    {"boolean", DType::boolean},
}};

const DTypeInfo& info(DType dtype) {
  return k_dtypes[static_cast<size_t>(dtype)];
}

}  // namespace

std::optional<DType> parse_dtype(std::string_view name) {
  for (const auto& entry : k_dtypes) {
    if (entry.name == name) return entry.dtype;
  }
  for (const auto& [alias, dtype] : k_aliases) {
    if (alias == name) return dtype;
  }
  return std::nullopt;
}

std::string_view dtype_name(DType dtype) {
  return info(dtype).name;
}

std::vector<std::string> dtype_names() {
  std::vector<std::string> names;
  for (const auto& entry : k_dtypes) names.emplace_back(entry.name);
  return names;
}

size_t dtype_size(DType dtype) {
  return info(dtype).size;
}

bool is_floating(DType dtype) {
  return dtype == DType::float32 || dtype == DType::float64 || dtype == DType::float16 || dtype == DType::bfloat16;
}

}  // namespace ca
