// Metrics against a hand computation over the verdicts of examples/candidates/cpu/EXPECTED.
#include "eval/metrics.h"

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include <gtest/gtest.h>

namespace ca {
namespace {

struct Speedups {
  double eager;
  std::optional<double> compile;
};

// Speedups given to the candidates EXPECTED calls PASS with a reward above -1; the expected numbers below are
// computed by hand from this table. A PASS candidate missing here fails the test.
const std::map<std::string, Speedups> k_speedups = {
    {"linear_leaky_relu__fast", {4.0, 2.0}},     {"linear_leaky_relu__naive", {0.5, 0.25}},
    {"softmax_cumsum__correct", {1.2, 1.04}},    {"conv_relu_pool__correct", {1.5, 0.9}},
    {"layernorm_gelu__correct", {1.0, 0.8}},     {"attention_rowmax__correct", {2.0, 1.5}},
    {"relu_rand__correct", {1.3, std::nullopt}}, {"relu_rand__forges_report", {8.0, 3.0}},
};

const std::map<std::string, int> k_levels = {{"example/linear_leaky_relu", 1}, {"example/softmax_cumsum", 1},
                                             {"example/relu_rand", 1},         {"example/conv_relu_pool", 2},
                                             {"example/layernorm_gelu", 2},    {"example/attention_rowmax", 2}};

// The paper rule of ca-reward (docs/RECORDS.md) on the table's speedups.
double paper_reward(const Speedups& s) {
  if (s.eager > 1.05 && s.compile && *s.compile > 1.05) return 3;
  return s.eager > 1.05 ? 2 : 1;
}

// Judged records as ca-verify | ca-profile | ca-reward would write them for each EXPECTED line, each candidate its
// own task (a suite of 25), plus a task with no solution and a degenerate task with a fast solution.
struct Fixture {
  std::vector<Json> tasks;
  std::vector<Json> judged;
  std::map<std::string, std::string> rejects;
};

Fixture expected_fixture() {
  Fixture fixture;
  std::ifstream expected(std::string(CA_SOURCE_DIR) + "/examples/candidates/cpu/EXPECTED");
  std::string line;
  while (std::getline(expected, line)) {
    std::istringstream fields(line);
    std::string name, task, verdict, reward;
    if (!(fields >> name >> task >> verdict >> reward)) continue;
    fixture.tasks.push_back({{"kind", "task"}, {"id", name}, {"level", k_levels.at(task)}});
    Json record = {{"kind", "candidate"}, {"task_id", name}};
    bool pass = verdict == "PASS";
    record["verify"] = {{"ok", pass}, {"stage", pass ? "" : verdict}};
    if (!pass) {
      record["profile"] = {{"ok", false}, {"skipped", "verification failed"}};
      record["reward"] = {{"value", -1}};
    } else if (reward == "-1") {  // passed verification, caught while timed
      record["profile"] = {{"ok", false}, {"stage", "compare"}};
      record["reward"] = {{"value", -1}};
    } else {
      EXPECT_TRUE(k_speedups.contains(name)) << name << " passes in EXPECTED but has no speedup in the test";
      const Speedups& s = k_speedups.at(name);
      double compile_us = s.compile ? 100.0 / *s.compile : 0;
      record["profile"] = {
          {"ok", true},
          {"times_us",
           {{"candidate", 100.0 / s.eager * s.eager},
            {"eager", 100.0 * s.eager},
            {"compile", s.compile ? Json(compile_us) : Json(nullptr)}}},
          {"speedup", {{"vs_eager", s.eager}, {"vs_compile", s.compile ? Json(*s.compile) : Json(nullptr)}}}};
      record["reward"] = {{"value", paper_reward(s)}};
      // EXPECTED's reward is a floor ("2+") or exact ("1"); the table must agree with it.
      double floor = std::stod(reward);
      EXPECT_TRUE(reward.ends_with('+') ? paper_reward(s) >= floor : paper_reward(s) == floor) << name;
    }
    fixture.judged.push_back(record);
  }
  fixture.tasks.push_back({{"kind", "task"}, {"id", "no_solution"}, {"level", 2}});
  fixture.tasks.push_back({{"kind", "task"}, {"id", "degenerate"}, {"level", 1}});
  fixture.rejects["degenerate"] = "constant-output";
  fixture.judged.push_back({{"task_id", "degenerate"},
                            {"verify", {{"ok", true}}},
                            {"profile", {{"ok", true}, {"speedup", {{"vs_eager", 50.0}, {"vs_compile", 50.0}}}}},
                            {"reward", {{"value", 3}}}});
  return fixture;
}

// EXPECTED as this test was written: 28 candidates, 8 of them PASS with a reward above -1 (the table above), 20
// failing (17 of them in level 1). A change to EXPECTED changes the hand computations below; the first test says so.
constexpr double k_tasks = 29;  // 28 candidates + the task with no solution

std::vector<TaskResult> fixture_results() {
  Fixture fixture = expected_fixture();
  std::multimap<std::string, TaskResult> judged;
  for (const Json& record : fixture.judged) {
    auto result = judge_result(record);
    EXPECT_TRUE(result.has_value()) << result.error();
    judged.emplace(result->task_id, *result);
  }
  return collect_results(fixture.tasks, judged, fixture.rejects);
}

TEST(EvalMetricsTest, CountsEveryTaskOfTheExpectedSuiteAndLeavesTheDegenerateApart) {
  Json summary = summarize(fixture_results());
  const Json& overall = summary["overall"];
  ASSERT_EQ(overall["tasks"], k_tasks) << "EXPECTED changed: update the hand computations of this test";
  EXPECT_EQ(overall["passed"], 8);  // PASS with a reward above -1 (honest_when_checked fails its profile)
  EXPECT_DOUBLE_EQ(overall["pass_rate"].get<double>(), 8.0 / k_tasks);
  EXPECT_EQ(summary["degenerate"]["tasks"], 1);
  EXPECT_EQ(summary["degenerate"]["passed"], 1);
}

TEST(EvalMetricsTest, FastPIsOverAllTasksWithStrictThresholds) {
  const Json summary = summarize(fixture_results());
  const Json& fast = summary["overall"]["fast_p"];
  // eager speedups of the passing: 4, 0.5, 1.2, 1.5, 1.0, 2.0, 1.3, 8
  std::map<std::string, double> eager = {{"0", 8}, {"1", 6}, {"1.05", 6}, {"1.5", 3}, {"2", 2}};
  // compile speedups: 2, 0.25, 1.04, 0.9, 0.8, 1.5, none, 3
  std::map<std::string, double> compile = {{"0", 7}, {"1", 4}, {"1.05", 3}, {"1.5", 2}, {"2", 1}};
  for (const auto& [p, count] : eager)
    EXPECT_DOUBLE_EQ(fast["vs_eager"][p].get<double>(), count / k_tasks) << "p=" << p;
  for (const auto& [p, count] : compile)
    EXPECT_DOUBLE_EQ(fast["vs_compile"][p].get<double>(), count / k_tasks) << "p=" << p;
}

TEST(EvalMetricsTest, FasterThanCompileAndGeometricMeansNameTheirTaskSets) {
  const Json summary = summarize(fixture_results());
  const Json& overall = summary["overall"];
  EXPECT_DOUBLE_EQ(overall["faster_than_compile"].get<double>(), 4.0 / k_tasks);
  const double eager_product = 4 * 0.5 * 1.2 * 1.5 * 1.0 * 2.0 * 1.3 * 8;  // 74.88
  const double compile_product = 2 * 0.25 * 1.04 * 0.9 * 0.8 * 1.5 * 3;    // 1.6848
  EXPECT_NEAR(overall["geomean_speedup_passing"]["vs_eager"].get<double>(), std::pow(eager_product, 1.0 / 8), 1e-12);
  EXPECT_EQ(overall["geomean_speedup_passing"]["tasks_eager"], 8);
  EXPECT_NEAR(overall["geomean_speedup_passing"]["vs_compile"].get<double>(), std::pow(compile_product, 1.0 / 7),
              1e-12);
  EXPECT_EQ(overall["geomean_speedup_passing"]["tasks_compile"], 7);
  EXPECT_NEAR(overall["geomean_speedup_failures_as_1"]["vs_eager"].get<double>(),
              std::pow(eager_product, 1.0 / k_tasks), 1e-12);
  EXPECT_NEAR(overall["geomean_speedup_failures_as_1"]["vs_compile"].get<double>(),
              std::pow(compile_product, 1.0 / k_tasks), 1e-12);
  EXPECT_EQ(overall["geomean_speedup_failures_as_1"]["tasks"], k_tasks);
  // Rewards 3 1 2 2 1 3 2 3 (17) and twenty -1; the task with no solution has none.
  EXPECT_DOUBLE_EQ(overall["mean_reward"].get<double>(), -3.0 / 28);
  EXPECT_EQ(overall["rewarded"], 28);
}

TEST(EvalMetricsTest, SplitsByLevel) {
  const Json summary = summarize(fixture_results());
  const Json& levels = summary["levels"];
  EXPECT_EQ(levels["1"]["tasks"], 23);
  EXPECT_EQ(levels["1"]["passed"], 5);
  EXPECT_DOUBLE_EQ(levels["1"]["fast_p"]["vs_eager"]["1"].get<double>(), 4.0 / 23);
  EXPECT_EQ(levels["2"]["tasks"], 6);
  EXPECT_EQ(levels["2"]["passed"], 3);
  EXPECT_DOUBLE_EQ(levels["2"]["fast_p"]["vs_eager"]["1"].get<double>(), 2.0 / 6);
  EXPECT_FALSE(levels.contains("none"));
}

TEST(EvalMetricsTest, NoTasksGiveNullRatesNotZeros) {
  Json metrics = compute_metrics({});
  EXPECT_TRUE(metrics["pass_rate"].is_null());
  EXPECT_TRUE(metrics["fast_p"]["vs_eager"]["1"].is_null());
  EXPECT_TRUE(metrics["geomean_speedup_passing"]["vs_eager"].is_null());
}

TEST(EvalResultsTest, MissingSolutionIsAFailedTaskNotADroppedOne) {
  auto results = collect_results({{{"id", "a"}, {"level", 1}}}, {}, {});
  ASSERT_EQ(results.size(), 1u);
  EXPECT_FALSE(results[0].pass);
  EXPECT_EQ(results[0].stage, "missing");
  EXPECT_EQ(to_json(results[0])["verdict"], "MISSING");
}

TEST(EvalResultsTest, KeepsTheBestOfSeveralSamples) {
  std::multimap<std::string, TaskResult> judged;
  judged.emplace("a", *judge_result({{"task_id", "a"}, {"verify", {{"ok", false}, {"stage", "compile"}}}}));
  judged.emplace("a", *judge_result({{"task_id", "a"}, {"verify", {{"ok", true}}}, {"reward", {{"value", 1}}}}));
  judged.emplace("a", *judge_result({{"task_id", "a"}, {"verify", {{"ok", true}}}, {"reward", {{"value", 2}}}}));
  auto results = collect_results({{{"id", "a"}}}, judged, {});
  EXPECT_TRUE(results[0].pass);
  EXPECT_EQ(results[0].reward, 2);
  EXPECT_EQ(results[0].samples, 3);
}

TEST(EvalResultsTest, ReadsSpeedupsOfAPassingProfileWithoutTimes) {
  auto result = judge_result(
      {{"task_id", "a"}, {"verify", {{"ok", true}}}, {"profile", {{"ok", true}, {"speedup", {{"vs_eager", 3.0}}}}}});
  ASSERT_TRUE(result.has_value());
  EXPECT_EQ(result->vs_eager, 3.0);
  EXPECT_FALSE(result->vs_compile.has_value());
}

TEST(EvalResultsTest, RejectsARecordWithoutAVerdict) {
  auto result = judge_result({{"task_id", "a"}});
  ASSERT_FALSE(result.has_value());
  EXPECT_NE(result.error().find("verify"), std::string::npos);
  EXPECT_FALSE(judge_result({{"task_id", "a"}, {"verify", {{"ok", "yes"}}}}).has_value());
}

TEST(EvalResultsTest, RoundTripsThroughTheTaskRecord) {
  TaskResult result;
  result.task_id = "t";
  result.level = 2;
  result.samples = 1;
  result.pass = true;
  result.candidate_us = 10;
  result.eager_us = 20;
  result.vs_eager = 2.0;
  result.reward = 2;
  result.degenerate = "constant-output";
  auto back = result_from_json(to_json(result));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(to_json(*back), to_json(result));
}

}  // namespace
}  // namespace ca
