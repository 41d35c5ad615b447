// Reports of an eval run: a Markdown page, one self-contained HTML page with inline SVG plots, and the side-by-side
// comparison of two runs.
#pragma once

#include <expected>
#include <string>
#include <vector>

#include "eval/results.h"

namespace ca {

/// An eval run read back: its per-task results and its summary record.
struct EvalRun {
  std::vector<TaskResult> tasks;
  Json summary;
};

/// Splits the records of a results file. Returns an error when there is no `eval_summary` or a task record is bad.
std::expected<EvalRun, std::string> parse_run(const std::vector<Json>& records);

/// The Markdown report: environment, the metrics table per level and overall, degenerate tasks, every task's row.
std::string markdown_report(const EvalRun& run);

/// The HTML report: the same tables and four inline SVG plots (speedup distribution, fast_p curves, per-level bars,
/// reward histogram); no external resource.
std::string html_report(const EvalRun& run);

/// Markdown comparing run A and run B: each overall metric side by side with B - A, then the tasks whose verdict
/// changed.
std::string compare_report(const EvalRun& a, const EvalRun& b);

}  // namespace ca
