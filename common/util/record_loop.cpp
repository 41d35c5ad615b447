#include "util/record_loop.h"

#include "util/log.h"
#include "util/progress.h"
#include "util/record_output.h"
#include "util/signals.h"

namespace ca {

ExitCode transform_records(const std::vector<std::string>& inputs, JsonlWriter& writer, OnBadRecord on_bad,
                           const Transform& transform) {
  ExitCode result = ExitCode::ok;
  Progress progress("records");
  for (const auto& path : inputs) {
    auto reader = JsonlReader::open(path);
    if (!reader) {
      error(reader.error());
      return ExitCode::no_input;
    }
    Record record;
    std::string message;
    for (;;) {
      auto status = reader->next(record, message);
      if (status == JsonlReader::Status::end) break;
      if (status == JsonlReader::Status::io_error) {
        error(reader->name(), message);
        return ExitCode::io_error;
      }
      if (interrupted()) return ExitCode::interrupted;
      auto out = status == JsonlReader::Status::record ? transform(record.value) : std::unexpected(message);
      progress.tick();
      if (!out) {
        error(record.where(), out.error());
        if (on_bad == OnBadRecord::stop) return ExitCode::data_error;
        result = ExitCode::some_failed;
        continue;
      }
      if (auto stop = emit(writer, *out)) return *stop;
    }
  }
  return result;
}

}  // namespace ca
