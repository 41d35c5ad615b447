// ca-report: a description of a task set such as ca-filter's kept tasks, in the terms the paper describes its
// CUDA-Agent-Ops-6K: op-count mix, op categories, eager runtime distribution, and similarity to KernelBench. Written as
// a folder: summary.json (the numbers), tasks.jsonl (one row per task), one SVG per figure and report.md.
//
// Measures (man/man1/ca-report.1 states them for users):
// - A task's ops: its nodes whose op is not a view or copy (normalize_op() of filter/similarity.h is not empty), so a
//   reshape between two ops does not make a task of three.
// - An op's category: the category ca-crawl ops gives it (docs/OPS.md), looked up in LibTorch's dispatcher;
//   "unregistered" when the dispatcher has no such op.
// - Similarity to KernelBench: for every task and every reference task, the Jaccard index of their multisets of
//   normalized op names (sum of the smaller counts over sum of the larger ones); a task's value for a level is its
//   best over that level's problems. ca-filter's own measure (3-shingle Jaccard of the op sequences, its
//   contamination check) is given beside it in summary.json.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/program.h"
#include "util/exit_codes.h"
#include "util/jsonl.h"

namespace ca {

/// What ca-report reads and writes.
struct SetReportRun {
  std::vector<std::string> inputs;      // task JSONL files; empty: stdin
  std::vector<std::string> references;  // KernelBench task records (ca-crawl kernelbench); may be empty
  std::string output_dir;               // the report folder, created when missing
  double window_min_ms = 1;             // the runtime window marked on the runtime figure and counted
  double window_max_ms = 100;
};

/// One task as the report sees it.
struct ReportTask {
  std::string id;
  std::vector<std::string> qualified_ops;  // ops that count (no view or copy ops), "aten::add.Tensor", in node order
  std::vector<std::string> ops;            // the same, normalized ("add")
  std::optional<double> eager_ms;          // meta.eager_ms (ca-filter), when present
  std::optional<double> compile_ms;        // meta.compile_ms (ca-filter --compile), when present
  std::optional<int64_t> composed_ops;     // meta.op_count (ca-synth's count, which includes view ops), when present
};

/// One reference problem.
struct ReportReference {
  std::string id;
  std::string level;  // "1", "2", ... from the record's level; "other" without one
  Program program;
};

/// The task of a task record, or an error naming what is wrong (not a task, bad program, eager_ms not a number).
std::expected<ReportTask, std::string> report_task(const Json& record);

/// The reference of a task record of ca-crawl kernelbench, or an error.
std::expected<ReportReference, std::string> report_reference(const Json& record);

/// Jaccard index of two multisets: sum over items of min(count) over sum of max(count); 1 for two empty ones.
double multiset_jaccard(const std::vector<std::string>& a, const std::vector<std::string>& b);

/// The value of sorted `values` at quantile q in [0, 1], linear between order statistics (numpy's default).
double quantile(const std::vector<double>& sorted, double q);

/// A report's contents: summary.json's object, tasks.jsonl's rows and each figure's SVG by file name.
struct SetReport {
  Json summary;
  std::vector<Json> rows;
  std::map<std::string, std::string> figures;
  std::string markdown;
};

/// Describes `tasks` against `references` (empty: no similarity section, no similarity figure).
SetReport describe_set(const std::vector<ReportTask>& tasks, const std::vector<ReportReference>& references,
                       double window_min_ms, double window_max_ms);

/// Runs ca-report: reads every input record whole (a record that is not a task with a program, or is not JSON, ends
/// the run with data_error as FILE:LINE; a missing file is no_input), the references likewise, then writes the folder.
/// io_error when the folder or a file cannot be written.
ExitCode write_set_report(const SetReportRun& run);

}  // namespace ca
