// ca-eval run --modelnew: KernelBench-format solutions (a Python file with class ModelNew per problem) judged by
// tools/ca-eval/modelnew_judge.py, which runs each solution in the sandbox (common/sandbox's bubblewrap command
// line, built here) against the task's reference Model; docs/EVAL.md, "KernelBench-format solutions".
#pragma once

#include <expected>
#include <string>
#include <vector>

#include "eval/run.h"

namespace ca {

/// The solution file of `task` in a KernelBench-format folder: DIR/<name>.py, the problem file's stem as the
/// KernelBench import names it (task `name`, else the stem of `file`), else DIR/<task id>.py. "" when neither exists.
std::string modelnew_file(const std::string& dir, const Json& task);

/// The judge's request for one task (the JSON file modelnew_judge.py reads): the task, the solution, the
/// sandbox's argv (bwrap and its arguments, then the server command), limits, trials, tolerance and seed.
/// `readable` are host paths the sandbox binds read-only beside the solution's folder (the Python installation,
/// the scripts, the problem's folder). Returns an error when bwrap (or, for root, setpriv) is not on PATH.
std::expected<Json, std::string> modelnew_request(const EvalOptions& options, const Json& task,
                                                  const std::string& solution,
                                                  const std::vector<std::string>& readable);

/// Judges every task of `tasks` that has a solution in options.modelnew, one task at a time (timings are not
/// shared with other work of this run), then adds rewards with ca-reward. Returns the judged records, or an error
/// when the scripts, the python or the sandbox are missing or a judge failed for the harness's own reasons.
std::expected<std::vector<Json>, std::string> judge_modelnew(const EvalOptions& options,
                                                             const std::vector<Json>& tasks);

}  // namespace ca
