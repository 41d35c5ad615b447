// ca-report: describe a task set (ca-filter's kept tasks) as the paper describes CUDA-Agent-Ops-6K: op-count mix, op
// categories, eager runtime distribution and similarity to KernelBench; a folder of numbers and figures
// (common/filter/report.h).
#include "filter/report.h"
#include "util/cli.h"
#include "util/exceptions.h"

using namespace ca;

int main(int argc, char** argv) try {
  ToolCli cli("ca-report",
              "Describe a task set: op-count mix, op categories, eager runtimes and similarity to KernelBench, as "
              "summary.json, tasks.jsonl, report.md and one SVG per figure in a folder.");
  SetReportRun run;
  auto& app = cli.app();
  app.add_option("FILE", run.inputs, "Task JSONL files (ca-filter's kept tasks), - for stdin (default)");
  app.add_option("-o,--output-dir", run.output_dir, "The report folder (created when missing)")->required();
  app.add_option("--reference", run.references,
                 "KernelBench task records (ca-crawl kernelbench) to measure similarity against; repeatable");
  app.add_option("--min-ms", run.window_min_ms, "Runtime window marked and counted: lower edge")
      ->capture_default_str()
      ->check(positive(1e6));
  app.add_option("--max-ms", run.window_max_ms, "Runtime window marked and counted: upper edge")
      ->capture_default_str()
      ->check(positive(1e6));
  if (auto code = cli.parse(argc, argv)) return to_int(*code);
  if (run.window_min_ms >= run.window_max_ms) return to_int(usage_error("--min-ms must be below --max-ms"));
  return to_int(write_set_report(run));
} catch (...) {  // LibTorch's and the standard library's exceptions: util/exceptions.h
  return report_uncaught_exception();
}
