// The field's metrics over per-task results: pass rate, KernelBench's fast_p against eager and torch.compile, the
// CUDA Agent paper's faster-than-compile rate, and geometric-mean speedups (docs/EVAL.md defines each).
#pragma once

#include <vector>

#include "eval/results.h"

namespace ca {

/// The thresholds p of fast_p.
inline const std::vector<double> k_fast_p_thresholds = {0.0, 1.0, 1.05, 1.5, 2.0};

/// Metrics of `results` (all counted; the caller leaves degenerate tasks out):
/// {tasks, passed, pass_rate, fast_p: {vs_eager: {"0": x, ...}, vs_compile: {...}}, faster_than_compile,
///  geomean_speedup_passing: {vs_eager, vs_compile, tasks_eager, tasks_compile},
///  geomean_speedup_failures_as_1: {vs_eager, vs_compile, tasks}, mean_reward}.
/// Rates over zero tasks and geometric means over no task are null.
Json compute_metrics(const std::vector<TaskResult>& results);

/// fast_p: the fraction of ALL `results` that pass with a speedup (vs eager, or vs compile) greater than p.
/// A passing task without a time is not fast. Null for no results.
Json fast_p(const std::vector<TaskResult>& results, double p, bool vs_compile);

/// {overall, levels: {"1": ..., "none": ...}, degenerate: {...}}: compute_metrics over the tasks that count, per
/// level (tasks without a level under "none"), and over the degenerate tasks on their own.
Json summarize(const std::vector<TaskResult>& results);

/// "1.05" for 1.05, "0" for 0: the key of a threshold.
std::string threshold_key(double p);

}  // namespace ca
