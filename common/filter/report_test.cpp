// The task-set report's measures, against hand counts.
#include "filter/report.h"

#include <gtest/gtest.h>

#include "torch/op_catalog.h"

namespace ca {
namespace {

Json task_record(const std::string& id, const std::vector<std::string>& ops, std::optional<double> eager_ms) {
  Json nodes = Json::array();
  std::string last = "%x";
  for (size_t i = 0; i < ops.size(); ++i) {
    nodes.push_back({{"op", ops[i]}, {"args", {last}}, {"out", {"t" + std::to_string(i)}}});
    last = "%t" + std::to_string(i);
  }
  Json record = {{"kind", "task"},
                 {"id", id},
                 {"program",
                  {{"inputs", {{{"name", "x"}, {"dtype", "float32"}, {"shape", {4, 8}}, {"init", "rand"}}}},
                   {"params", Json::array()},
                   {"nodes", nodes},
                   {"outputs", {last.substr(1)}}}},
                 {"meta", Json::object()}};
  if (eager_ms) record["meta"]["eager_ms"] = *eager_ms;
  return record;
}

TEST(SetReportTest, MultisetJaccardCountsRepeats) {
  EXPECT_DOUBLE_EQ(multiset_jaccard({"relu", "relu", "add"}, {"relu", "add"}), 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(multiset_jaccard({"relu"}, {"relu"}), 1.0);
  EXPECT_DOUBLE_EQ(multiset_jaccard({"relu"}, {"tanh"}), 0.0);
  EXPECT_DOUBLE_EQ(multiset_jaccard({}, {}), 1.0);
}

TEST(SetReportTest, QuantileInterpolatesBetweenOrderStatistics) {
  EXPECT_DOUBLE_EQ(quantile({1, 2, 3, 4}, 0.5), 2.5);
  EXPECT_DOUBLE_EQ(quantile({1, 2, 3, 4, 5}, 0.1), 1.4);
  EXPECT_DOUBLE_EQ(quantile({7}, 0.9), 7);
}

TEST(SetReportTest, CategoriesComeFromTheDispatcher) {
  EXPECT_EQ(op_category("aten::relu"), "activation");
  EXPECT_EQ(op_category("aten::mul.Scalar"), "elementwise");
  EXPECT_EQ(op_category("aten::softmax.int"), "softmax");
  EXPECT_EQ(op_category("aten::no_such_op"), std::nullopt);
}

TEST(SetReportTest, ViewOpsDoNotCount) {
  Json record = task_record("a", {"aten::relu", "aten::clone", "aten::tanh"}, 2.0);
  record["meta"]["op_count"] = 3;  // ca-synth's count includes the clone
  auto task = report_task(record);
  ASSERT_TRUE(task) << task.error();
  EXPECT_EQ(task->ops, (std::vector<std::string>{"relu", "tanh"}));
  EXPECT_EQ(task->composed_ops, 3);
  EXPECT_EQ(task->eager_ms, 2.0);
  EXPECT_FALSE(task->compile_ms);
}

TEST(SetReportTest, BadRecordsSayWhy) {
  Json not_task = task_record("a", {"aten::relu"}, 1.0);
  not_task["kind"] = "op";
  EXPECT_FALSE(report_task(not_task));
  Json bad_time = task_record("a", {"aten::relu"}, 1.0);
  bad_time["meta"]["eager_ms"] = "fast";
  auto result = report_task(bad_time);
  ASSERT_FALSE(result);
  EXPECT_NE(result.error().find("meta.eager_ms"), std::string::npos) << result.error();
}

TEST(SetReportTest, SummaryMatchesAHandCount) {
  std::vector<ReportTask> tasks;
  tasks.push_back(*report_task(task_record("t1", {"aten::relu"}, 0.5)));
  tasks.push_back(*report_task(task_record("t2", {"aten::relu", "aten::tanh"}, 2.0)));
  tasks.push_back(*report_task(task_record("t3", {"aten::sigmoid", "aten::mul.Scalar"}, 50.0)));
  tasks.push_back(*report_task(task_record("t4", {"aten::relu", "aten::relu", "aten::softmax.int"}, std::nullopt)));
  Json ref1 = task_record("kb1", {"aten::relu"}, std::nullopt), ref2 = task_record("kb2", {"aten::tanh"}, std::nullopt);
  ref1["level"] = 1;
  ref2["level"] = 2;
  std::vector<ReportReference> refs = {*report_reference(ref1), *report_reference(ref2)};
  SetReport report = describe_set(tasks, refs, 1, 100);
  const Json& s = report.summary;
  EXPECT_EQ(s["tasks"], 4);
  EXPECT_EQ(s["op_count"]["tasks"], Json({{"1", 1}, {"2", 2}, {"3", 1}}));
  EXPECT_DOUBLE_EQ(s["op_count"]["mean"].get<double>(), 2.0);
  // 8 ops: relu x4 and tanh, sigmoid (activation: 6), mul (elementwise: 1), softmax (1).
  EXPECT_EQ(s["categories"]["ops"], 8);
  EXPECT_EQ(s["categories"]["categories"][0]["category"], "activation");
  EXPECT_EQ(s["categories"]["categories"][0]["ops"], 6);
  EXPECT_EQ(s["categories"]["categories"][0]["tasks"], 4);
  const Json& eager = s["runtime"]["eager_ms"];
  EXPECT_EQ(s["runtime"]["untimed"], 1);
  EXPECT_EQ(eager["count"], 3);
  EXPECT_DOUBLE_EQ(eager["median"].get<double>(), 2.0);
  EXPECT_EQ(eager["below_window"], 1);
  EXPECT_EQ(eager["in_window"], 2);
  // Level 1 (relu): t1 1, t2 1/2, t3 0, t4 1/3 (relu x2 + softmax: 1 in common of 3). Level 2 (tanh): 0, 1/2, 0, 0.
  const Json& l1 = s["kernelbench"]["levels"]["1"];
  EXPECT_EQ(l1["at_1"], 1);
  EXPECT_EQ(l1["at_least_0.5"], 2);
  EXPECT_DOUBLE_EQ(l1["median"].get<double>(), (0.5 + 1.0 / 3.0) / 2);
  EXPECT_EQ(l1["problems_matched_at_1"], 1);
  EXPECT_EQ(s["kernelbench"]["levels"]["2"]["at_1"], 0);
  EXPECT_EQ(report.rows[1]["kernelbench"]["nearest"]["level2"]["id"], "kb2");
  EXPECT_EQ(report.figures.size(), 4u);
  EXPECT_NE(report.figures.at("eager_ms.svg").find("class=\"marker\""), std::string::npos);
}

}  // namespace
}  // namespace ca
