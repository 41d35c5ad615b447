// Metrics over per-task results.
#include "eval/metrics.h"

#include <cmath>
#include <map>
#include "util/text_format.h"

namespace ca {

namespace {

Json rate(size_t count, size_t total) {
  return total == 0 ? Json(nullptr) : Json(double(count) / double(total));
}

const std::optional<double>& speedup_of(const TaskResult& result, bool vs_compile) {
  return vs_compile ? result.vs_compile : result.vs_eager;
}

// Geometric mean of the passing tasks' measured speedups; with failures_as_one, over every task, each one without
// a measured speedup (failed, missing or untimed) counting as 1.0. Returns {mean or null, tasks in the mean}.
std::pair<Json, size_t> geomean(const std::vector<TaskResult>& results, bool vs_compile, bool failures_as_one) {
  double log_sum = 0;
  size_t n = 0;
  for (const TaskResult& result : results) {
    const auto& speedup = speedup_of(result, vs_compile);
    bool measured = result.pass && speedup && *speedup > 0;
    if (!measured && !failures_as_one) continue;
    log_sum += measured ? std::log(*speedup) : 0.0;
    ++n;
  }
  return {n == 0 ? Json(nullptr) : Json(std::exp(log_sum / double(n))), n};
}

}  // namespace

std::string threshold_key(double p) {
  return format_text("{}", p);
}

Json fast_p(const std::vector<TaskResult>& results, double p, bool vs_compile) {
  size_t fast = 0;
  for (const TaskResult& result : results) {
    const auto& speedup = speedup_of(result, vs_compile);
    if (result.pass && speedup && *speedup > p) ++fast;
  }
  return rate(fast, results.size());
}

Json compute_metrics(const std::vector<TaskResult>& results) {
  size_t passed = 0, rewarded = 0;
  double reward_sum = 0;
  for (const TaskResult& result : results) {
    passed += result.pass ? 1 : 0;
    if (result.reward) {
      reward_sum += *result.reward;
      ++rewarded;
    }
  }
  Json metrics = {{"tasks", results.size()}, {"passed", passed}, {"pass_rate", rate(passed, results.size())}};
  Json eager = Json::object(), compile = Json::object();
  for (double p : k_fast_p_thresholds) {
    eager[threshold_key(p)] = fast_p(results, p, false);
    compile[threshold_key(p)] = fast_p(results, p, true);
  }
  metrics["fast_p"] = {{"vs_eager", eager}, {"vs_compile", compile}};
  metrics["faster_than_compile"] = fast_p(results, 1.0, true);
  auto [passing_eager, n_eager] = geomean(results, false, false);
  auto [passing_compile, n_compile] = geomean(results, true, false);
  metrics["geomean_speedup_passing"] = {{"vs_eager", passing_eager},
                                        {"vs_compile", passing_compile},
                                        {"tasks_eager", n_eager},
                                        {"tasks_compile", n_compile}};
  metrics["geomean_speedup_failures_as_1"] = {{"vs_eager", geomean(results, false, true).first},
                                              {"vs_compile", geomean(results, true, true).first},
                                              {"tasks", results.size()}};
  // A task without a reward (a missing solution, a record never rewarded) is left out of the mean, and counted.
  metrics["mean_reward"] = rewarded == 0 ? Json(nullptr) : Json(reward_sum / double(rewarded));
  metrics["rewarded"] = rewarded;
  return metrics;
}

Json summarize(const std::vector<TaskResult>& results) {
  std::vector<TaskResult> counted, degenerate;
  std::map<std::string, std::vector<TaskResult>> by_level;
  for (const TaskResult& result : results) {
    if (!result.degenerate.empty()) {
      degenerate.push_back(result);
      continue;
    }
    counted.push_back(result);
    by_level[result.level ? std::to_string(*result.level) : "none"].push_back(result);
  }
  Json levels = Json::object();
  for (const auto& [level, level_results] : by_level) levels[level] = compute_metrics(level_results);
  return {{"overall", compute_metrics(counted)}, {"levels", levels}, {"degenerate", compute_metrics(degenerate)}};
}

}  // namespace ca
