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
  for (size_t input = 0; input < inputs.size(); ++input) {
    const std::string& path = inputs[input];
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
      record.input = input;
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

std::expected<std::optional<ExitCode>, std::string> journaled_visit(RecordJournal* journal, const Record& record,
                                                                    const ComputeEntry& compute,
                                                                    const EmitEntry& emit_entry) {
  if (journal == nullptr) {
    auto entry = compute(record);
    if (!entry) return std::unexpected(entry.error());
    return emit_entry(*entry);
  }
  const std::string key = journal_key(record), digest = journal_digest(record.value);
  auto found = journal->find(key, digest);
  if (!found) {
    error(record.where(), found.error());
    return ExitCode::usage;
  }
  JournalEntry entry;
  if (*found != nullptr) {
    entry = **found;
  } else {
    auto computed = exception_as_error<JournalEntry>([&] { return compute(record); });
    // A record cut short by SIGINT or SIGTERM is not finished: a resume computes it again.
    if (!computed && interrupted()) return std::unexpected(computed.error());
    entry = computed ? std::move(*computed) : JournalEntry{{}, computed.error()};
    if (auto appended = journal->append(key, digest, entry); !appended) {
      error(appended.error());
      return ExitCode::io_error;
    }
  }
  if (entry.error) return std::unexpected(*entry.error);
  return emit_entry(entry);
}

ExitCode transform_records(const std::vector<std::string>& inputs, JsonlWriter& writer, OnBadRecord on_bad,
                           const Transform& transform, unsigned jobs, RecordJournal* journal) {
  auto emit_first = [&](const JournalEntry& entry) -> std::optional<ExitCode> {
    for (const auto& [stream, record] : entry.out) {
      if (auto stop = emit(writer, record)) return stop;
    }
    return std::nullopt;
  };
  if (jobs <= 1) {
    return visit_records(inputs, on_bad, [&](const Record& record) {
      return journaled_visit(
          journal, record,
          [&](const Record& r) -> std::expected<JournalEntry, std::string> {
            auto out = transform(r.value);
            if (!out) return std::unexpected(out.error());
            return JournalEntry{{{0, std::move(*out)}}, std::nullopt};
          },
          emit_first);
    });
  }
  // Records in flight, oldest first; the oldest is finished (reported or written) before a new one starts once
  // `jobs` are running, so output order is input order and memory stays bounded. A record the journal holds is
  // in flight as a ready result, and journaled records are appended in input order as they are finished.
  struct Pending {
    std::string where, key, digest;
    bool journaled = false;
    std::future<std::expected<Json, std::string>> out;
  };
  std::deque<Pending> pending;
  bool failed = false;
  auto finish_oldest = [&]() -> std::optional<ExitCode> {
    Pending oldest = std::move(pending.front());
    pending.pop_front();
    auto out = oldest.out.get();
    if (journal != nullptr && !oldest.journaled && (out || !interrupted())) {
      JournalEntry entry = out ? JournalEntry{{{0, *out}}, std::nullopt} : JournalEntry{{}, out.error()};
      if (auto appended = journal->append(oldest.key, oldest.digest, entry); !appended) {
        error(appended.error());
        return ExitCode::io_error;
      }
    }
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
        Pending next{record.where(), "", "", false, {}};
        if (journal != nullptr) {
          next.key = journal_key(record);
          next.digest = journal_digest(record.value);
          auto found = journal->find(next.key, next.digest);
          if (!found) {
            error(record.where(), found.error());
            return *drain(ExitCode::usage);
          }
          if (*found != nullptr) {
            const JournalEntry& entry = **found;
            std::promise<std::expected<Json, std::string>> ready;
            if (entry.error) {
              ready.set_value(std::unexpected(*entry.error));
            } else {
              ready.set_value(entry.out.empty() ? Json() : entry.out.front().second);
            }
            next.journaled = true;
            next.out = ready.get_future();
            pending.push_back(std::move(next));
            return std::nullopt;
          }
        }
        // An exception is the record's failure (exception_as_error), not rethrown by get() to end the whole run.
        next.out = std::async(std::launch::async, [&transform, value = record.value] {
          return exception_as_error<Json>([&] { return transform(value); });
        });
        pending.push_back(std::move(next));
        return std::nullopt;
      });
  std::optional<ExitCode> end = drain(std::nullopt);
  if (result != ExitCode::ok && result != ExitCode::some_failed) return result;
  if (end) return *end;
  return failed ? ExitCode::some_failed : result;
}

}  // namespace ca
