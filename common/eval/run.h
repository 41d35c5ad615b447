// ca-eval run: judge solutions (or a policy's episodes) on a suite by driving ca-verify, ca-profile and ca-reward
// (or ca-rollout) as subprocesses, then make the per-task results and the summary record.
#pragma once

#include <expected>
#include <map>
#include <string>
#include <vector>

#include "eval/results.h"
#include "util/exit_codes.h"
#include "util/journal.h"

namespace ca {

struct EvalOptions {
  std::string suite;      // task JSONL
  std::string solutions;  // candidate JSONL, or a folder of <task dir>/kernels/...
  std::string judged;     // records that already carry verify (and profile, reward), or trajectories
  std::string policy;     // ca-rollout's --policy
  std::string modelnew;   // a folder of KernelBench-format solutions, <problem>.py with class ModelNew
  std::string rejects;    // ca-filter --rejects output: tasks reported apart as degenerate
  std::string backend = "cpu";
  std::string bin_dir;                     // where ca-verify, ca-profile, ca-reward and ca-rollout are
  std::string work_dir;                    // where the tools' intermediate records go
  std::vector<std::string> profile_flags;  // passed to ca-profile (and --no-compile to ca-rollout)
  int trials = 8;                          // modelnew: checked calls before timing
  int timed_calls = 20;                    // modelnew: timed calls (each checked too), after 2 warm-up calls
  unsigned jobs = 1;
  uint64_t seed = 0;
  // The run's journal (util/journal.h; nullptr: none): every finished stage (its tool's records) and every --modelnew
  // problem judged, so that a resumed run goes on from the first unfinished one.
  RecordJournal* journal = nullptr;
  // Resuming: ca-verify, ca-profile and ca-rollout get --resume, and carry on from their own journals in work_dir.
  bool resume = false;
};

/// Reads a JSONL file whole. Returns "FILE:LINE: message" for the first bad line, or the open error.
std::expected<std::vector<Json>, std::string> read_all_records(const std::string& path);

/// Candidate records from a solutions folder: for each task, DIR/<task dir name>/ with its files (kernels/...).
/// A task without a folder has no candidate. Returns an error when DIR cannot be read.
std::expected<std::vector<Json>, std::string> candidates_from_folder(const std::string& dir,
                                                                     const std::vector<Json>& tasks,
                                                                     const std::string& backend);

/// Runs the judging tools (or reads --judged) and returns the judged records. Errors name the tool and its stderr.
/// With options.journal, a stage the journal holds is not run again: its records are written back to its output in
/// work_dir for the next stage.
std::expected<std::vector<Json>, std::string> judge(const EvalOptions& options, const std::vector<Json>& tasks);

/// The summary's `environment`: hardware (the profiles' device, else this CPU), torch and driver versions (probed
/// here with the python of the venv beside `bin_dir`, or $CA_PYTHON), tolerance, timing method, baseline precision
/// and backend, from the judged records.
Json describe_environment(const std::vector<Json>& judged, const std::string& backend, const std::string& bin_dir);

/// The whole run: per-task records then one `eval_summary` record. Returns the records or an error with its code.
std::expected<std::vector<Json>, std::pair<ExitCode, std::string>> run_eval(const EvalOptions& options);

}  // namespace ca
