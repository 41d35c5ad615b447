#include "synth/synthesize.h"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <thread>

#include "util/log.h"
#include "util/record_output.h"
#include "util/signals.h"

namespace ca {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

ExitCode synthesize_with_grammar(const std::vector<Json>& records, const std::string& ops_path,
                                 const SynthOptions& options, size_t count, const std::string& output) {
  auto start = std::chrono::steady_clock::now();
  size_t unknown = 0;
  std::vector<OpTemplate> ops = op_templates(records, unknown);
  if (unknown > 0) warning(std::to_string(unknown) + " usable op(s) not in this LibTorch, skipped");
  if (ops.empty()) {
    error(ops_path, "no usable op records");
    return ExitCode::data_error;
  }
  Composer composer(std::move(ops), options);
  ExitCode code = write_records(output, [&](JsonlWriter& writer) {
    for (size_t i = 0; i < count; ++i) {
      if (interrupted()) return ExitCode::interrupted;
      auto task = composer.next();
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
                             const std::string& output) {
  auto start = std::chrono::steady_clock::now();
  LlmComposer composer(std::move(records), llm, std::move(post));
  const size_t limit = run.prompts > 0 ? run.prompts : 3 * run.count;
  ExitCode code = write_records(output, [&](JsonlWriter& writer) {
    // Workers take turns at the composer and the output; only the requests (the server's answer and the sandboxed
    // import) run side by side.
    std::mutex mutex;
    size_t made = 0, in_flight = 0;
    ExitCode result = ExitCode::ok;
    bool stop = false;
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
        if (!task) {
          verbose("request " + std::to_string(request.index + 1) + ": " + task.error());
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
