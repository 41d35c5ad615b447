// One evaluation result per suite task, from judged records (ca-verify | ca-profile | ca-reward output, or
// ca-rollout trajectories): a task without a judged record is a failed task, never a dropped one.
#pragma once

#include <expected>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "util/jsonl.h"

namespace ca {

struct TaskResult {
  std::string task_id;
  std::optional<int64_t> level;
  int samples = 0;    // judged records of this task (0: no solution)
  bool pass = false;  // verify.ok, and no profile that failed (a wrong timed call, a time under the floor)
  std::string stage;  // "" when pass; "missing" without a solution; else the failing stage
  std::optional<double> candidate_us, eager_us, compile_us;
  std::optional<double> vs_eager, vs_compile;  // only for a passing task with the times
  std::optional<double> reward;
  std::string degenerate;   // why ca-filter rejected the task; "" for a task that counts
  std::string kernelbench;  // KernelBench-format solutions: KernelBench's own check, "PASS" or "FAIL"; else ""
};

/// The result one judged record (a candidate with `verify`, or a trajectory) gives its task.
/// Returns an error naming the field when `verify` is missing or malformed.
std::expected<TaskResult, std::string> judge_result(const Json& record);

/// Whether `a` is a better solution of the same task than `b`: passing first, then reward, then speedup vs eager.
bool better_result(const TaskResult& a, const TaskResult& b);

/// One result per task of `tasks`, in their order: the best of the task's judged records (`judged`, by task id),
/// or a failed "missing" result. `rejects` (task id -> reason) and a task's own `reject.reason` mark it degenerate.
std::vector<TaskResult> collect_results(const std::vector<Json>& tasks,
                                        const std::multimap<std::string, TaskResult>& judged,
                                        const std::map<std::string, std::string>& rejects);

/// The `eval_task` record of a result, and back. from_json returns an error naming the field.
Json to_json(const TaskResult& result);
std::expected<TaskResult, std::string> result_from_json(const Json& record);

}  // namespace ca
