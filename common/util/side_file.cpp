#include "util/side_file.h"

#include "util/log.h"

namespace ca {

std::expected<std::vector<Record>, SideFileError> read_side_file(const std::string& path,
                                                                 const SideRecordCheck& check) {
  auto reader = JsonlReader::open(path);
  if (!reader) return std::unexpected(SideFileError{ExitCode::no_input, reader.error()});
  std::vector<Record> records;
  Record record;
  std::string message;
  for (;;) {
    auto status = reader->next(record, message);
    if (status == JsonlReader::Status::end) return records;
    if (status == JsonlReader::Status::interrupted) {
      return std::unexpected(SideFileError{ExitCode::interrupted, reader->name() + ": " + message});
    }
    if (status == JsonlReader::Status::io_error) {
      return std::unexpected(SideFileError{ExitCode::io_error, reader->name() + ": " + message});
    }
    if (status == JsonlReader::Status::bad_record) {
      return std::unexpected(SideFileError{ExitCode::data_error, record.where() + ": " + message});
    }
    if (check) {
      if (auto checked = check(record.value); !checked) {
        return std::unexpected(SideFileError{ExitCode::data_error, record.where() + ": " + checked.error()});
      }
    }
    records.push_back(std::move(record));
  }
}

ExitCode report_side_file_error(const SideFileError& error) {
  ca::error(error.message);
  return error.code;
}

}  // namespace ca
