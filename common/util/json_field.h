// Typed access to record fields with errors that name the field's path,
// e.g. "program.nodes[2].op: expected a string, got number".
#pragma once

#include <cstdint>
#include <expected>
#include <string>
#include <string_view>
#include <vector>

#include "util/jsonl.h"

namespace ca {

/// "a.b" + "c" -> "a.b.c"; "" + "c" -> "c".
std::string field_path(std::string_view parent, std::string_view key);
/// "a.b" + 3 -> "a.b[3]".
std::string index_path(std::string_view parent, size_t index);

/// JSON type names as a user reads them: "string", "number", "array", ...
std::string json_type(const Json& value);

/// Returns object[key] or an error "<path>.<key>: missing field".
std::expected<const Json*, std::string> require_field(const Json& object, std::string_view key, std::string_view path);

/// object[key] as a string / list of integers, with require_field's errors.
std::expected<std::string, std::string> string_field(const Json& object, std::string_view key, std::string_view path);
std::expected<std::vector<int64_t>, std::string> int_list_field(const Json& object, std::string_view key,
                                                                std::string_view path);

/// Fails on a key of `object` not in `known`, naming the nearest known one: a
/// misspelled optional key must not fall back to its default silently.
std::expected<void, std::string> check_known_fields(const Json& object, const std::vector<std::string>& known,
                                                    std::string_view path);

std::expected<std::string, std::string> as_string(const Json& value, std::string_view path);
std::expected<int64_t, std::string> as_int(const Json& value, std::string_view path);
std::expected<double, std::string> as_number(const Json& value, std::string_view path);
std::expected<std::vector<int64_t>, std::string> as_int_list(const Json& value, std::string_view path);

}  // namespace ca
