// ca-filter's run over task files: reference tasks loaded first, every record judged (TaskFilter), kept tasks to the
// output and rejects (with their reason) to a second file, and a count per reason at the end.
#pragma once

#include <string>
#include <vector>

#include "filter/filter.h"
#include "util/exit_codes.h"
#include "util/journal.h"

namespace ca {

struct FilterRun {
  std::vector<std::string> inputs;      // task JSONL files; empty: stdin
  std::string output = "-";             // kept tasks
  std::string rejects;                  // "" = rejects are only counted
  std::vector<std::string> references;  // task records not to resemble
  bool fail_fast = false;               // stop at the first record that cannot be judged (exit 65)
  unsigned jobs = 1;                    // bridge processes compiling baselines at once (options.compile)
  int threads = 1;                      // cpu: eager's intra-op threads, and the compiled baseline's
  JournalOptions journal;               // the journal beside output (util/journal.h); journal.resume: --resume
};

/// Runs ca-filter: sets eager's threads, loads the references (a bad one ends the run: 66 missing,
/// 65 bad, 74 unreadable), precompiles the baselines of file inputs, then judges every record. Kept records go to
/// run.output, rejected ones to run.rejects; a record that cannot be judged is reported and skipped (exit 1) or ends
/// the run (run.fail_fast, exit 65). Prints "kept K of N; rejected: reason n, ..." to stderr. Returns the exit
/// code; 64 when options.backend is cuda and no CUDA device is available, or when run.output and run.rejects are one
/// file (same_output_file), checked before anything is read.
ExitCode filter_records(FilterOptions options, FilterRun run);

}  // namespace ca
