#include "eval/results.h"

#include <gtest/gtest.h>

#include <tuple>

#include "eval/metrics.h"
#include "eval/report.h"

namespace ca {
namespace {

Json modelnew_record(const std::string& task, bool ok, const std::string& kernelbench) {
  Json record = {{"task_id", task}, {"verify", {{"ok", ok}, {"stage", ok ? "" : "correctness"}}}};
  record["kernelbench"] = {{"verdict", kernelbench}, {"message", ""}};
  return record;
}

TEST(EvalResultsTest, KeepsKernelBenchsVerdictThroughTheResultsFile) {
  auto judged = judge_result(modelnew_record("t", false, "PASS"));
  ASSERT_TRUE(judged) << judged.error();
  EXPECT_EQ(judged->kernelbench, "PASS");
  EXPECT_FALSE(judged->pass);
  auto back = result_from_json(to_json(*judged));
  ASSERT_TRUE(back) << back.error();
  EXPECT_EQ(back->kernelbench, "PASS");
  EXPECT_EQ(back->stage, "correctness");
}

TEST(EvalResultsTest, RecordsWithoutKernelBenchsCheckHaveNoColumnForIt) {
  Json record = {{"task_id", "t"}, {"verify", {{"ok", true}}}};
  auto judged = judge_result(record);
  ASSERT_TRUE(judged) << judged.error();
  EXPECT_FALSE(to_json(*judged).contains("kernelbench"));
  EvalRun run{{*judged}, {{"suite", "s"}, {"source", "x"}, {"environment", Json::object()}}};
  run.summary.update(summarize(run.tasks));
  EXPECT_EQ(markdown_report(run).find("KernelBench eval"), std::string::npos);
}

TEST(EvalResultsTest, ReportListsOnlyTheSolutionsWhereTheVerdictsDisagree) {
  std::vector<TaskResult> tasks;
  for (const auto& [id, ok, kernelbench] :
       std::vector<std::tuple<std::string, bool, std::string>>{{"agree_pass", true, "PASS"},
                                                               {"agree_fail", false, "FAIL"},
                                                               {"harness_stricter", false, "PASS"},
                                                               {"kernelbench_stricter", true, "FAIL"}}) {
    auto judged = judge_result(modelnew_record(id, ok, kernelbench));
    ASSERT_TRUE(judged) << judged.error();
    tasks.push_back(*judged);
  }
  EvalRun run{tasks, {{"suite", "s"}, {"source", "modelnew d"}, {"environment", Json::object()}}};
  run.summary.update(summarize(run.tasks));
  std::string report = markdown_report(run);
  EXPECT_NE(report.find("disagree: 2 solution(s)"), std::string::npos) << report;
  EXPECT_NE(report.find("| harness_stricter | FAIL (correctness) | PASS |"), std::string::npos) << report;
  EXPECT_NE(report.find("| kernelbench_stricter | PASS | FAIL |"), std::string::npos) << report;
  EXPECT_EQ(report.find("| agree_fail | FAIL"), std::string::npos) << report;
  EXPECT_NE(html_report(run).find("KernelBench eval"), std::string::npos);
}

}  // namespace
}  // namespace ca
