#include "util/json_field.h"

#include <algorithm>

#include "util/spell.h"

namespace ca {

std::string field_path(std::string_view parent, std::string_view key) {
  if (parent.empty()) return std::string(key);
  return std::string(parent) + "." + std::string(key);
}

std::string index_path(std::string_view parent, size_t index) {
  return std::string(parent) + "[" + std::to_string(index) + "]";
}

std::string json_type(const Json& value) {
  if (value.is_number()) return "number";
  return value.type_name();
}

namespace {

std::string expected_got(std::string_view path, std::string_view what, const Json& value) {
  return std::string(path) + ": expected " + std::string(what) + ", got " + json_type(value);
}

}  // namespace

std::expected<const Json*, std::string> require_field(const Json& object, std::string_view key, std::string_view path) {
  if (!object.is_object()) return std::unexpected(expected_got(path, "an object", object));
  auto it = object.find(std::string(key));
  if (it == object.end()) return std::unexpected(field_path(path, key) + ": missing field");
  return &*it;
}

std::expected<std::string, std::string> string_field(const Json& object, std::string_view key, std::string_view path) {
  auto field = require_field(object, key, path);
  if (!field) return std::unexpected(field.error());
  return as_string(**field, field_path(path, key));
}

std::expected<std::vector<int64_t>, std::string> int_list_field(const Json& object, std::string_view key,
                                                                std::string_view path) {
  auto field = require_field(object, key, path);
  if (!field) return std::unexpected(field.error());
  return as_int_list(**field, field_path(path, key));
}

std::expected<void, std::string> check_known_fields(const Json& object, const std::vector<std::string>& known,
                                                    std::string_view path) {
  if (!object.is_object()) return std::unexpected(expected_got(path, "an object", object));
  for (auto it = object.begin(); it != object.end(); ++it) {
    if (std::find(known.begin(), known.end(), it.key()) == known.end()) {
      return std::unexpected(field_path(path, it.key()) + ": unknown field" + did_you_mean(it.key(), known) +
                             " (fields: " + quoted_list(known) + ")");
    }
  }
  return {};
}

std::expected<std::string, std::string> as_string(const Json& value, std::string_view path) {
  if (!value.is_string()) return std::unexpected(expected_got(path, "a string", value));
  return value.get<std::string>();
}

std::expected<int64_t, std::string> as_int(const Json& value, std::string_view path) {
  if (!value.is_number_integer()) return std::unexpected(expected_got(path, "an integer", value));
  return value.get<int64_t>();
}

std::expected<double, std::string> as_number(const Json& value, std::string_view path) {
  if (!value.is_number()) return std::unexpected(expected_got(path, "a number", value));
  return value.get<double>();
}

std::expected<std::vector<int64_t>, std::string> as_int_list(const Json& value, std::string_view path) {
  if (!value.is_array()) return std::unexpected(expected_got(path, "a list of integers", value));
  std::vector<int64_t> out;
  for (size_t i = 0; i < value.size(); ++i) {
    auto item = as_int(value[i], index_path(path, i));
    if (!item) return std::unexpected(item.error());
    out.push_back(*item);
  }
  return out;
}

}  // namespace ca
