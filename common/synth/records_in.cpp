#include "synth/records_in.h"

#include "util/json_field.h"

namespace ca {
namespace {

std::expected<void, std::string> check_record(const Json& record, const std::string& kind) {
  if (!record.is_object()) return std::unexpected("expected a JSON object, got " + json_type(record));
  auto got = string_field(record, "kind", "");
  if (!got) return std::unexpected(got.error());
  if (*got != kind) return std::unexpected("kind: expected \"" + kind + "\", got \"" + *got + "\"");
  std::vector<std::string> strings = kind == "op" ? std::vector<std::string>{"name", "overload", "category"}
                                                  : std::vector<std::string>{"name", "forward_source"};
  for (const auto& key : strings) {
    auto value = string_field(record, key, "");
    if (!value) return std::unexpected(value.error());
  }
  if (kind == "op") {
    auto usable = require_field(record, "usable", "");
    if (!usable) return std::unexpected(usable.error());
    if (!(*usable)->is_boolean()) return std::unexpected("usable: expected a boolean, got " + json_type(**usable));
  }
  return {};
}

}  // namespace

std::expected<std::vector<Json>, SideFileError> read_input_records(const std::string& path, const std::string& kind) {
  auto records = read_side_file(path, [&](const Json& record) { return check_record(record, kind); });
  if (!records) return std::unexpected(records.error());
  std::vector<Json> values;
  for (auto& record : *records) values.push_back(std::move(record.value));
  return values;
}

}  // namespace ca
