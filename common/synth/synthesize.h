// ca-synth's two runs, each from its input records to an exit code: the built-in grammar (composer.h) and an
// OpenAI-compatible LLM (llm.h). Both write `count` task records to `output` and a summary to stderr, and journal
// every finished task (and, for the LLM, every failed request) beside `output` (util/journal.h): a run cut short
// and resumed gives what an uninterrupted run with its seed gives.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "synth/composer.h"
#include "synth/llm.h"
#include "util/exit_codes.h"
#include "util/journal.h"
#include "util/jsonl.h"

namespace ca {

/// The grammar: `count` tasks composed from the usable ones of the op records `records` (`ops_path` names them in
/// errors). Exit 65 when no op record is usable, 1 when the composer fails, 130 when interrupted.
ExitCode synthesize_with_grammar(const std::vector<Json>& records, const std::string& ops_path,
                                 const SynthOptions& options, size_t count, const std::string& output,
                                 const JournalOptions& journal);

/// How many tasks or prompts an LLM run makes, and how many requests it keeps in flight.
struct LlmRun {
  size_t count = 10;   // tasks to make (-n), after at most 3 * count requests
  size_t prompts = 0;  // when > 0: send exactly this many prompts and write the tasks they give, however few
  size_t jobs = 1;     // requests in flight at once (a server that batches answers them together)
};

/// The LLM: tasks asked of `llm` through `post`, from op (and module) records, as `run` says. A failed request is
/// counted, not fatal; with `count`, after 3 * count requests without count tasks the run ends with exit 1. With
/// jobs > 1 the tasks are written in the order their answers come back. 130 when interrupted.
ExitCode synthesize_with_llm(std::vector<Json> records, const LlmOptions& llm, HttpPost post, const LlmRun& run,
                             const std::string& output, const JournalOptions& journal);

}  // namespace ca
