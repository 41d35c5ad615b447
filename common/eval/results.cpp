// Judged records to per-task results.
#include "eval/results.h"

#include "util/json_field.h"

namespace ca {

namespace {

std::optional<double> number_at(const Json& object, const char* key) {
  if (!object.is_object() || !object.contains(key) || !object[key].is_number()) return std::nullopt;
  return object[key].get<double>();
}

// A profile that ran and failed (not one skipped after a failed verification) makes the candidate wrong.
bool profile_failed(const Json& record) {
  if (!record.contains("profile") || !record["profile"].is_object()) return false;
  const Json& profile = record["profile"];
  return profile.value("ok", true) == false && !profile.contains("skipped");
}

Json optional_json(const std::optional<double>& value) {
  return value ? Json(*value) : Json(nullptr);
}

}  // namespace

std::expected<TaskResult, std::string> judge_result(const Json& record) {
  auto task_id = string_field(record, "task_id", "");
  if (!task_id) return std::unexpected(task_id.error());
  auto verify = require_field(record, "verify", "");
  if (!verify) return std::unexpected(verify.error());
  if (!(*verify)->is_object() || !(*verify)->contains("ok") || !(**verify)["ok"].is_boolean()) {
    return std::unexpected("verify.ok: missing or not a boolean");
  }
  TaskResult result;
  result.task_id = *task_id;
  result.samples = 1;
  result.pass = (**verify)["ok"].get<bool>() && !profile_failed(record);
  if (!result.pass) {
    const Json& failed = profile_failed(record) ? record["profile"] : **verify;
    result.stage = failed.value("stage", std::string("unknown"));
  }
  const Json& profile =
      record.contains("profile") && record["profile"].is_object() ? record["profile"] : Json::object();
  if (profile.contains("times_us")) {
    result.candidate_us = number_at(profile["times_us"], "candidate");
    result.eager_us = number_at(profile["times_us"], "eager");
    result.compile_us = number_at(profile["times_us"], "compile");
  }
  if (result.pass && profile.contains("speedup")) {
    result.vs_eager = number_at(profile["speedup"], "vs_eager");
    result.vs_compile = number_at(profile["speedup"], "vs_compile");
  }
  if (record.contains("reward")) result.reward = number_at(record["reward"], "value");
  if (record.contains("kernelbench") && record["kernelbench"].is_object())
    result.kernelbench = record["kernelbench"].value("verdict", std::string());
  return result;
}

bool better_result(const TaskResult& a, const TaskResult& b) {
  if (a.pass != b.pass) return a.pass;
  double reward_a = a.reward.value_or(-1e300), reward_b = b.reward.value_or(-1e300);
  if (reward_a != reward_b) return reward_a > reward_b;
  return a.vs_eager.value_or(0) > b.vs_eager.value_or(0);
}

std::vector<TaskResult> collect_results(const std::vector<Json>& tasks,
                                        const std::multimap<std::string, TaskResult>& judged,
                                        const std::map<std::string, std::string>& rejects) {
  std::vector<TaskResult> results;
  for (const Json& task : tasks) {
    TaskResult best;
    best.task_id = task.value("id", std::string());
    best.stage = "missing";
    auto [begin, end] = judged.equal_range(best.task_id);
    int samples = 0;
    for (auto it = begin; it != end; ++it, ++samples) {
      if (samples == 0 || better_result(it->second, best)) best = it->second;
    }
    best.samples = samples;
    if (task.contains("level") && task["level"].is_number_integer()) best.level = task["level"].get<int64_t>();
    if (auto reject = rejects.find(best.task_id); reject != rejects.end()) best.degenerate = reject->second;
    if (task.contains("reject") && task["reject"].is_object())
      best.degenerate = task["reject"].value("reason", std::string("rejected"));
    results.push_back(std::move(best));
  }
  return results;
}

Json to_json(const TaskResult& result) {
  Json record = {{"kind", "eval_task"}, {"task_id", result.task_id}};
  record["level"] = result.level ? Json(*result.level) : Json(nullptr);
  record["samples"] = result.samples;
  record["verdict"] = result.samples == 0 ? "MISSING" : (result.pass ? "PASS" : "FAIL");
  record["stage"] = result.stage;
  record["times_us"] = {{"candidate", optional_json(result.candidate_us)},
                        {"eager", optional_json(result.eager_us)},
                        {"compile", optional_json(result.compile_us)}};
  record["speedup"] = {{"vs_eager", optional_json(result.vs_eager)}, {"vs_compile", optional_json(result.vs_compile)}};
  record["reward"] = optional_json(result.reward);
  record["degenerate"] = result.degenerate.empty() ? Json(nullptr) : Json(result.degenerate);
  if (!result.kernelbench.empty()) record["kernelbench"] = result.kernelbench;
  return record;
}

std::expected<TaskResult, std::string> result_from_json(const Json& record) {
  auto task_id = string_field(record, "task_id", "");
  if (!task_id) return std::unexpected(task_id.error());
  auto verdict = string_field(record, "verdict", "");
  if (!verdict) return std::unexpected(verdict.error());
  TaskResult result;
  result.task_id = *task_id;
  result.pass = *verdict == "PASS";
  result.samples = record.value("samples", 0);
  result.stage = record.value("stage", std::string());
  if (record.contains("level") && record["level"].is_number_integer()) result.level = record["level"].get<int64_t>();
  const Json empty = Json::object();
  const Json& times = record.contains("times_us") ? record["times_us"] : empty;
  result.candidate_us = number_at(times, "candidate");
  result.eager_us = number_at(times, "eager");
  result.compile_us = number_at(times, "compile");
  const Json& speedup = record.contains("speedup") ? record["speedup"] : empty;
  result.vs_eager = number_at(speedup, "vs_eager");
  result.vs_compile = number_at(speedup, "vs_compile");
  result.reward = number_at(record, "reward");
  if (record.contains("degenerate") && record["degenerate"].is_string())
    result.degenerate = record["degenerate"].get<std::string>();
  if (record.contains("kernelbench") && record["kernelbench"].is_string())
    result.kernelbench = record["kernelbench"].get<std::string>();
  return result;
}

}  // namespace ca
