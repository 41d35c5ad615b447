#include "util/record_loop.h"

#include <deque>
#include <future>

#include "util/exceptions.h"
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
      if (status == JsonlReader::Status::interrupted) return ExitCode::interrupted;
      if (status == JsonlReader::Status::io_error) {
        error(reader->name(), message);
        return ExitCode::io_error;
      }
      if (interrupted()) return ExitCode::interrupted;
      auto done = status == JsonlReader::Status::record
                      ? exception_as_error<std::optional<ExitCode>>([&] { return visit(record); })
                      : std::unexpected(message);
      progress.tick();
      if (!done) {
        error(record.where(), done.error());
        // A record cut short by SIGINT or SIGTERM (a wait for the device, a killed runner) is not bad input.
        if (interrupted()) return ExitCode::interrupted;
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
                           const Transform& transform, unsigned jobs) {
  if (jobs <= 1) {
    return visit_records(inputs, on_bad,
                         [&](const Record& record) -> std::expected<std::optional<ExitCode>, std::string> {
                           auto out = transform(record.value);
                           if (!out) return std::unexpected(out.error());
                           return emit(writer, *out);
                         });
  }
  // Records in flight, oldest first; the oldest is finished (reported or written) before a new one starts once
  // `jobs` are running, so output order is input order and memory stays bounded.
  struct Pending {
    std::string where;
    std::future<std::expected<Json, std::string>> out;
  };
  std::deque<Pending> pending;
  bool failed = false;
  auto finish_oldest = [&]() -> std::optional<ExitCode> {
    Pending oldest = std::move(pending.front());
    pending.pop_front();
    auto out = oldest.out.get();
    if (out) return emit(writer, *out);
    error(oldest.where, out.error());
    if (interrupted()) return ExitCode::interrupted;
    failed = true;
    return on_bad == OnBadRecord::stop ? std::optional(ExitCode::data_error) : std::nullopt;
  };
  // Finishes what is in flight in order; once the run has ended (a failed write, or --fail-fast), later records are
  // waited for but not written, as a sequential run would never have reached them.
  auto drain = [&](std::optional<ExitCode> end) {
    while (!pending.empty()) {
      if (end) {
        pending.front().out.wait();
        pending.pop_front();
      } else {
        end = finish_oldest();
      }
    }
    return end;
  };
  ExitCode result =
      visit_records(inputs, on_bad, [&](const Record& record) -> std::expected<std::optional<ExitCode>, std::string> {
        if (pending.size() >= jobs) {
          if (auto code = finish_oldest()) return *drain(code);
        }
        // An exception is the record's failure (exception_as_error), not rethrown by get() to end the whole run.
        pending.push_back({record.where(), std::async(std::launch::async, [&transform, value = record.value] {
                             return exception_as_error<Json>([&] { return transform(value); });
                           })});
        return std::nullopt;
      });
  std::optional<ExitCode> end = drain(std::nullopt);
  if (result != ExitCode::ok && result != ExitCode::some_failed) return result;
  if (end) return *end;
  return failed ? ExitCode::some_failed : result;
}

}  // namespace ca
