#include "util/record_output.h"

#include "util/log.h"

namespace ca {

std::optional<ExitCode> emit(JsonlWriter& writer, const Json& record) {
  switch (writer.write(record)) {
    case JsonlWriter::Status::ok:
      return std::nullopt;
    case JsonlWriter::Status::broken_pipe:
      return ExitCode::ok;
    case JsonlWriter::Status::io_error:
      error("writing output failed");
      return ExitCode::io_error;
  }
  return ExitCode::io_error;
}

ExitCode write_records(const std::string& path, const std::function<ExitCode(JsonlWriter&)>& produce) {
  auto writer = JsonlWriter::open(path);
  if (!writer) {
    error(writer.error());
    return ExitCode::io_error;
  }
  ExitCode code = produce(*writer);
  if (code != ExitCode::ok && code != ExitCode::some_failed) return code;
  if (auto committed = writer->commit(); !committed) {
    error(committed.error());
    return ExitCode::io_error;
  }
  return code;
}

}  // namespace ca
