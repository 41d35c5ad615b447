#include "synth/synthesize.h"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <thread>

#include "util/cli.h"
#include "util/log.h"
#include "util/record_output.h"
#include "util/signals.h"

namespace ca {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// A task's (or request's) place in the journal, and its digest: the run's input records, which the journal's header
// cannot digest when they come from stdin, and the index. A resume over other records is refused at the first item.
std::string item_key(const char* kind, size_t index) {
  return std::string(kind) + ":" + std::to_string(index);
}
std::string item_digest(const std::string& inputs, size_t index) {
  return journal_digest(Json{{"inputs", inputs}, {"index", index}});
}

// The entry the journal holds for an item: nullptr when none (or no journal); a usage error, reported, when the item
// was journaled from other inputs.
std::expected<const JournalEntry*, ExitCode> journaled(const RecordJournal* journal, const std::string& key,
                                                       const std::string& digest) {
  if (journal == nullptr) return nullptr;
  auto found = journal->find(key, digest);
  if (!found) return std::unexpected(usage_error(found.error()));
  return *found;
}

std::optional<ExitCode> append(RecordJournal* journal, const std::string& key, const std::string& digest,
                               const JournalEntry& entry) {
  if (journal == nullptr) return std::nullopt;
  if (auto appended = journal->append(key, digest, entry); !appended) {
    error(appended.error());
    return ExitCode::io_error;
  }
  return std::nullopt;
}

// An LLM request's outcome in the journal: stream 0 the task it made, stream 1 why it made none.
JournalEntry llm_entry(const std::expected<Json, LlmFailure>& outcome) {
  if (outcome) return JournalEntry{{{0, *outcome}}, std::nullopt};
  return JournalEntry{{{1, Json{{"reason", outcome.error().reason}, {"detail", outcome.error().detail}}}},
                      std::nullopt};
}
std::optional<std::expected<Json, LlmFailure>> llm_outcome(const JournalEntry& entry) {
  using Outcome = std::expected<Json, LlmFailure>;
  for (const auto& [stream, record] : entry.out) {
    if (stream == 0 && record.is_object()) return Outcome(record);
    if (stream == 1 && record.value("reason", Json()).is_string())
      return Outcome(std::unexpect, LlmFailure{record["reason"].get<std::string>(), record.value("detail", "")});
  }
  return std::nullopt;  // neither a task nor a failure
}

}  // namespace

ExitCode synthesize_with_grammar(const std::vector<Json>& records, const std::string& ops_path,
                                 const SynthOptions& options, size_t count, const std::string& output,
                                 const JournalOptions& journal_options) {
  auto start = std::chrono::steady_clock::now();
  size_t unknown = 0;
  std::vector<OpTemplate> ops = op_templates(records, unknown);
  if (unknown > 0) warning(std::to_string(unknown) + " usable op(s) not in this LibTorch, skipped");
  if (ops.empty()) {
    error(ops_path, "no usable op records");
    return ExitCode::data_error;
  }
  Composer composer(std::move(ops), options);
  const std::string inputs = journal_digest(Json(records));
  ExitCode code = write_journaled_records(output, journal_options, [&](JsonlWriter& writer, RecordJournal* journal) {
    for (size_t i = 0; i < count; ++i) {
      if (interrupted()) return ExitCode::interrupted;
      const std::string key = item_key("task", i), digest = item_digest(inputs, i);
      auto found = journaled(journal, key, digest);
      if (!found) return found.error();
      std::expected<Json, std::string> task;
      if (*found != nullptr) {
        const JournalEntry& entry = **found;
        if (entry.error) {
          task = std::unexpected(*entry.error);
        } else if (entry.out.size() != 1) {
          error(journal->path(), key + ": a journal entry without its task");
          return ExitCode::data_error;
        } else if (auto replayed = composer.replay(entry.out[0].second); !replayed) {
          error(journal->path(), key + ": " + replayed.error());
          return ExitCode::data_error;
        } else {
          task = entry.out[0].second;
        }
      } else {
        task = composer.next();
        // A task cut short by SIGINT or SIGTERM is not finished: a resume composes it again.
        if (!task && interrupted()) return ExitCode::interrupted;
        JournalEntry entry = task ? JournalEntry{{{0, *task}}, std::nullopt} : JournalEntry{{}, task.error()};
        if (auto stop = append(journal, key, digest, entry)) return *stop;
      }
      if (!task) {
        error(task.error());
        return ExitCode::some_failed;
      }
      if (auto stop = emit(writer, *task)) return *stop;
    }
    return ExitCode::ok;
  });
  note(composer.summary(seconds_since(start)));
  return code;
}

ExitCode synthesize_with_llm(std::vector<Json> records, const LlmOptions& llm, HttpPost post, const LlmRun& run,
                             const std::string& output, const JournalOptions& journal_options) {
  auto start = std::chrono::steady_clock::now();
  const std::string inputs = journal_digest(Json(records));
  LlmComposer composer(std::move(records), llm, std::move(post));
  const size_t limit = run.prompts > 0 ? run.prompts : 3 * run.count;
  ExitCode code = write_journaled_records(output, journal_options, [&](JsonlWriter& writer, RecordJournal* journal) {
    // Workers take turns at the composer and the output; only the requests (the server's answer and the sandboxed
    // import) run side by side.
    std::mutex mutex;
    size_t made = 0, in_flight = 0;
    ExitCode result = ExitCode::ok;
    bool stop = false;
    // A resume first writes the tasks of the requests its journal holds, in request order, and counts their
    // failures; prepare() then skips them.
    for (size_t i = 0; journal != nullptr && journal->resumed() > 0 && i < limit; ++i) {
      auto found = journaled(journal, item_key("request", i), item_digest(inputs, i));
      if (!found) return found.error();
      if (*found == nullptr) continue;
      auto outcome = llm_outcome(**found);
      if (!outcome) {
        error(journal->path(), item_key("request", i) + ": a journal entry with neither a task nor a failure");
        return ExitCode::data_error;
      }
      composer.replay(i, *outcome);
      if (!*outcome) continue;
      if (auto failed = emit(writer, **outcome)) return *failed;
      ++made;
    }
    auto work = [&] {
      std::unique_lock lock(mutex);
      while (!stop) {
        if (interrupted()) {
          result = ExitCode::interrupted;
          break;
        }
        // With -n, no more requests than the tasks still missing may be in flight.
        if (run.prompts == 0 && made + in_flight >= run.count) break;
        if (composer.requests() >= limit) break;
        LlmRequest request = composer.prepare();
        ++in_flight;
        lock.unlock();
        auto answer = composer.ask(request);
        lock.lock();
        --in_flight;
        auto task = composer.finish(request, std::move(answer));
        // A request cut short by SIGINT or SIGTERM is not finished: a resume asks it again.
        if (task || !interrupted()) {
          const std::string key = item_key("request", request.index);
          if (auto failed = append(journal, key, item_digest(inputs, request.index), llm_entry(task))) {
            result = *failed;
            stop = true;
            break;
          }
        }
        if (!task) {
          verbose("request " + std::to_string(request.index + 1) + ": " + task.error().reason + ": " +
                  task.error().detail);
          continue;
        }
        if (auto failed = emit(writer, *task)) {
          result = *failed;
          stop = true;
        }
        ++made;
      }
    };
    std::vector<std::thread> workers;
    for (size_t i = 1; i < std::max<size_t>(run.jobs, 1); ++i) workers.emplace_back(work);
    work();
    for (auto& worker : workers) worker.join();
    // -n: the requests ran out before the tasks were made.
    if (result == ExitCode::ok && run.prompts == 0 && made < run.count) result = ExitCode::some_failed;
    return result;
  });
  note(composer.summary() + " in " + std::to_string(int(seconds_since(start))) + " s");
  return code;
}

}  // namespace ca
