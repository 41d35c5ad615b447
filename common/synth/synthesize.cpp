#include "synth/synthesize.h"

#include <chrono>

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

ExitCode synthesize_with_llm(std::vector<Json> records, const LlmOptions& llm, HttpPost post, size_t count,
                             const std::string& output) {
  auto start = std::chrono::steady_clock::now();
  LlmComposer composer(std::move(records), llm, std::move(post));
  ExitCode code = write_records(output, [&](JsonlWriter& writer) {
    for (size_t made = 0; made < count;) {
      if (interrupted()) return ExitCode::interrupted;
      if (composer.requests() >= 3 * count) return ExitCode::some_failed;
      auto task = composer.next();
      if (!task) {
        verbose("request " + std::to_string(composer.requests()) + ": " + task.error());
        continue;
      }
      if (auto stop = emit(writer, *task)) return *stop;
      ++made;
    }
    return ExitCode::ok;
  });
  note(composer.summary() + " in " + std::to_string(int(seconds_since(start))) + " s");
  return code;
}

}  // namespace ca
