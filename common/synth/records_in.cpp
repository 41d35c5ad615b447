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

std::expected<std::vector<Json>, InputError> read_input_records(const std::string& path, const std::string& kind) {
  auto reader = JsonlReader::open(path);
  if (!reader) return std::unexpected(InputError{ExitCode::no_input, reader.error()});
  std::vector<Json> records;
  Record record;
  std::string message;
  for (;;) {
    auto status = reader->next(record, message);
    if (status == JsonlReader::Status::end) return records;
    if (status == JsonlReader::Status::io_error) return std::unexpected(InputError{ExitCode::io_error, reader->name() + ": " + message});
    if (status == JsonlReader::Status::bad_record) return std::unexpected(InputError{ExitCode::data_error, record.where() + ": " + message});
    if (auto checked = check_record(record.value, kind); !checked) {
      return std::unexpected(InputError{ExitCode::data_error, record.where() + ": " + checked.error()});
    }
    records.push_back(std::move(record.value));
  }
}

}  // namespace ca
