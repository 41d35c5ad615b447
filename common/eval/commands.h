// ca-eval's three subcommands, each a whole run from its arguments to an exit code: `run` (run_eval with its
// journal, its work folder and its output), `report` (report.md and report.html of a results file) and `compare`
// (two results files in Markdown on stdout).
#pragma once

#include <expected>
#include <string>
#include <utility>

#include "eval/report.h"
#include "eval/run.h"
#include "util/exit_codes.h"
#include "util/journal.h"

namespace ca {

/// An error with the exit code it ends the run with.
using EvalError = std::pair<ExitCode, std::string>;

/// A results file of `ca-eval run` ("-": stdin) read back. Errors: 66 with the open error for a file that does not
/// exist; 65 with "FILE:LINE: message" for a line that is not JSON (or the read error), and with "FILE: message"
/// for records that are not a run (parse_run: a foreign kind, a bad task record, no eval_summary).
std::expected<EvalRun, EvalError> load_run(const std::string& path);

/// Where a run's tools write their intermediate records.
struct WorkDir {
  std::string path;
  bool temporary = false;  // the run's own: removed once the run completes (kept when a journaled one is cut short)
};

/// The work folder of a run, made: `given` (--workdir) when not empty, kept; else `journal_path` + ".d" beside
/// the run's journal (`journal_path` empty: no journal), where a resumed run finds its tools' records and their own
/// journals, emptied first unless `resume`; else a fresh ca-eval-XXXXXX under the temporary directory. Errors: a
/// temporary folder that mkdtemp cannot make. A folder create_directories cannot make throws its filesystem_error,
/// which the tool's exception guard reports (util/exceptions.h).
std::expected<WorkDir, std::string> make_work_dir(const std::string& given, const std::string& journal_path,
                                                  bool resume);

/// `run`: judges options' solutions (or policy, judged records, --modelnew folder) on the suite (run_eval) and
/// writes the per-task records and the summary to `output` ("-": stdout), journaled beside it as `journal` says
/// (util/journal.h; journal.resume: --resume). An empty options.bin_dir is this executable's folder; options.work_dir
/// becomes make_work_dir's. Exit 64 when no source of solutions is given (checked first), run_eval's code and
/// message when it fails, 74 when the output cannot be written, else write_records' code; each reported.
ExitCode eval_run(EvalOptions options, const std::string& output, const JournalOptions& journal);

/// `report`: report.md and report.html (markdown_report, html_report) of the results file `results` in `dir`, made
/// when missing; each written atomically, stale temporaries of a killed report removed first. Exit load_run's code,
/// or 74 when `dir` or a report cannot be written; each reported.
ExitCode write_eval_report(const std::string& results, const std::string& dir);

/// `compare`: compare_report of the results files `a` and `b` on stdout. Exit load_run's code (A's first), or 74
/// when stdout cannot be written; each reported.
ExitCode compare_runs(const std::string& a, const std::string& b);

}  // namespace ca
