#include "util/record_loop.h"

#include "util/log.h"
#include "util/progress.h"
#include "util/record_output.h"
#include "util/signals.h"

namespace ca {

ExitCode visit_records(const std::vector<std::string>& inputs, OnBadRecord on_bad, const Visit& visit,
                       size_t* reported) {
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
      auto done = status == JsonlReader::Status::record ? visit(record) : std::unexpected(message);
      progress.tick();
      if (!done) {
        error(record.where(), done.error());
        if (reported != nullptr) ++*reported;
        if (on_bad == OnBadRecord::stop) return ExitCode::data_error;
        result = ExitCode::some_failed;
        continue;
      }
      if (*done) return **done;
    }
  }
  return result;
}

ExitCode transform_records(const std::vector<std::string>& inputs, JsonlWriter& writer, OnBadRecord on_bad,
                           const Transform& transform) {
  return visit_records(inputs, on_bad, [&](const Record& record) -> std::expected<std::optional<ExitCode>, std::string> {
    auto out = transform(record.value);
    if (!out) return std::unexpected(out.error());
    return emit(writer, *out);
  });
}

}  // namespace ca
