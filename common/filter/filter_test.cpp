#include "filter/filter.h"

#include <gtest/gtest.h>

namespace ca {
namespace {

// A task of one input x [16, 32] (rand) and the given nodes; the last node's output is the task's.
Json task(const std::string& id, Json nodes, Json params = Json::array(), Json inputs = nullptr) {
  if (inputs.is_null())
    inputs = Json::array({{{"name", "x"}, {"dtype", "float32"}, {"shape", {16, 32}}, {"init", "rand"}}});
  std::string out = nodes.back()["out"][0];
  return {{"kind", "task"},
          {"id", id},
          {"seed", 1},
          {"program", {{"inputs", inputs}, {"params", params}, {"nodes", nodes}, {"outputs", {out}}}}};
}

Json node(const std::string& op, Json args, const std::string& out) {
  return {{"op", op}, {"args", args}, {"out", {out}}};
}

FilterOptions fast_options() {
  FilterOptions options;
  options.min_ms = 0;
  options.max_ms = 0;
  options.timed_calls = 1;
  return options;
}

std::string reason_of(TaskFilter& filter, const Json& record) {
  auto verdict = filter.judge(record);
  EXPECT_TRUE(verdict) << verdict.error();
  if (!verdict) return "error";
  return verdict->reason ? reason_name(*verdict->reason) : "kept";
}

TEST(Filter, KeepsAGoodTaskWithMeasurements) {
  TaskFilter filter(fast_options());
  Json params = Json::array({{{"name", "w"}, {"dtype", "float32"}, {"shape", {8, 32}}, {"init", "kaiming_uniform"}}});
  auto verdict = filter.judge(
      task("good", {node("aten::linear", {"%x", "%w", nullptr}, "y"), node("aten::tanh", {"%y"}, "z")}, params));
  ASSERT_TRUE(verdict) << verdict.error();
  EXPECT_FALSE(verdict->reason) << verdict->detail;
  EXPECT_TRUE(verdict->record["meta"].contains("eager_ms"));
  EXPECT_TRUE(verdict->record["meta"].contains("fingerprint"));
  EXPECT_EQ(verdict->record["filter"]["device"], "cpu");
  EXPECT_FALSE(verdict->record.contains("reject"));
}

TEST(Filter, RejectsEachDegenerateKindWithItsReason) {
  TaskFilter filter(fast_options());
  // relu(-|x|) clamped is identically zero: the zeros control passes (KernelBench L2-83's shape of defect).
  EXPECT_EQ(reason_of(filter, task("zeros", {node("aten::abs", {"%x"}, "a"), node("aten::neg", {"%a"}, "n"),
                                             node("aten::relu", {"%n"}, "r")})),
            "control-zeros");
  // x - x + 1: every element 1.
  EXPECT_EQ(reason_of(filter, task("constant", {node("aten::sub.Tensor", {"%x", "%x"}, "d"),
                                                node("aten::add.Scalar", {"%d", 1}, "c")})),
            "degenerate-constant");
  // The param is multiplied by zero: the output does not depend on it.
  Json params = Json::array({{{"name", "w"}, {"dtype", "float32"}, {"shape", {16, 32}}}});
  EXPECT_EQ(reason_of(filter, task("ignores",
                                   {node("aten::mul.Scalar", {"%w", 0.0}, "z"),
                                    node("aten::add.Tensor", {"%x", "%z"}, "s"), node("aten::sin", {"%s"}, "y")},
                                   params)),
            "ignores-input");
  // 1000 + 1e-3 * x: nearly constant, its mean passes.
  EXPECT_EQ(reason_of(filter, task("mean", {node("aten::mul.Scalar", {"%x", 0.001}, "s"),
                                            node("aten::add.Scalar", {"%s", 1000.0}, "y")})),
            "control-mean");
  // x * 1.001 is x within rtol.
  EXPECT_EQ(reason_of(filter, task("passthrough", {node("aten::mul.Scalar", {"%x", 1.001}, "y")})),
            "control-passthrough");
  EXPECT_EQ(reason_of(filter, task("nan", {node("aten::sub.Scalar", {"%x", 2}, "d"), node("aten::log", {"%d"}, "y")})),
            "non-finite");
  EXPECT_EQ(reason_of(filter, task("random", {node("aten::bernoulli.p", {"%x", 0.5}, "y")})), "random-op");
}

// The controls are judged on the distribution ca-profile times (the task's own inputs), not only where verification's
// signed trials would also have to pass: a candidate tells the two apart by its inputs.
TEST(Filter, ControlsThatPassOnlyOnTheTimedDistributionReject) {
  TaskFilter filter(fast_options());
  auto wide = [](const char* init) {
    return Json::array({{{"name", "x"}, {"dtype", "float32"}, {"shape", {64, 4096}}, {"init", init}}});
  };
  // Row means of rand inputs are 0.5 within the tolerance; on signed inputs they are about 0 and vary too much.
  EXPECT_EQ(
      reason_of(filter, task("row-mean-rand", {node("aten::mean.dim", {"%x", {1}}, "y")}, Json::array(), wide("rand"))),
      "control-mean");
  // relu(-x) of rand inputs is all zeros (constant too; the zeros control comes first); of signed inputs it is not.
  EXPECT_EQ(reason_of(filter, task("relu-neg", {node("aten::neg", {"%x"}, "n"), node("aten::relu", {"%n"}, "y")})),
            "control-zeros");
  // relu of rand inputs is the input.
  EXPECT_EQ(reason_of(filter, task("relu", {node("aten::relu", {"%x"}, "y")})), "control-passthrough");
  // The honest twins: row means of randn inputs over 64 values, and gelu, which no control matches.
  auto narrow = Json::array({{{"name", "x"}, {"dtype", "float32"}, {"shape", {64, 64}}, {"init", "randn"}}});
  EXPECT_EQ(
      reason_of(filter, task("row-mean-randn", {node("aten::mean.dim", {"%x", {1}}, "y")}, Json::array(), narrow)),
      "kept");
  EXPECT_EQ(reason_of(filter, task("gelu", {node("aten::gelu", {"%x"}, "y")})), "kept");
}

TEST(Filter, DuplicatesNearDuplicatesAndContamination) {
  TaskFilter filter(fast_options());
  Json nodes = {node("aten::sigmoid", {"%x"}, "s"), node("aten::mul.Scalar", {"%s", 3.0}, "y")};
  EXPECT_EQ(reason_of(filter, task("first", nodes)), "kept");
  EXPECT_EQ(reason_of(filter, task("renamed",
                                   {node("aten::sigmoid", {"%x"}, "a"), node("aten::mul.Scalar", {"%a", 3.0}, "b")})),
            "duplicate");
  EXPECT_EQ(reason_of(filter, task("literal",
                                   {node("aten::sigmoid", {"%x"}, "s"), node("aten::mul.Scalar", {"%s", 4.0}, "y")})),
            "near-duplicate");

  ASSERT_TRUE(filter.add_reference(task("kb/tanh", {node("aten::tanh", {"%x"}, "y")})));
  EXPECT_EQ(reason_of(filter, task("tanh", {node("aten::tanh", {"%x"}, "t"), node("aten::view", {"%t", {512}}, "y")})),
            "contaminated");
}

TEST(Filter, RuntimeWindowAndUnjudgeableRecords) {
  FilterOptions options = fast_options();
  options.min_ms = 1e6;
  TaskFilter filter(options);
  auto verdict = filter.judge(task("fast", {node("aten::sin", {"%x"}, "y")}));
  ASSERT_TRUE(verdict);
  ASSERT_TRUE(verdict->reason);
  EXPECT_EQ(reason_name(*verdict->reason), "too-fast");
  EXPECT_TRUE(verdict->record["meta"].contains("eager_ms"));
  EXPECT_EQ(verdict->record["reject"]["reason"], "too-fast");

  EXPECT_FALSE(filter.judge(Json::array()));
  EXPECT_FALSE(filter.judge(Json{{"kind", "op"}, {"id", "x"}}));
  EXPECT_FALSE(filter.judge(Json{{"kind", "task"}, {"id", "x"}}));
  Json bad = task("bad", {node("aten::no_such_op", {"%x"}, "y")});
  EXPECT_EQ(reason_of(filter, bad), "eager-error");
}

TEST(Filter, FlagsTinyOutputsThatVerificationStillJudges) {
  TaskFilter filter(fast_options());
  // Below atol everywhere: allclose alone would pass zeros; the normalized error does not, so the task is kept,
  // flagged.
  auto verdict = filter.judge(task("tiny", {node("aten::mul.Scalar", {"%x", 1e-4}, "y")}));
  ASSERT_TRUE(verdict) << verdict.error();
  EXPECT_FALSE(verdict->reason) << verdict->detail;
  ASSERT_TRUE(verdict->record["filter"].contains("flags"));
  EXPECT_EQ(verdict->record["filter"]["flags"][0].get<std::string>().rfind("tiny-output: output 0", 0), 0u);
}

TEST(Filter, RejectsOutputsThatAreRoundingNoise) {
  TaskFilter filter(fast_options());
  // x * 1.0000001 - x: in float32 the product rounds to x or its neighbour, so the output is 0 or one ulp of x, not
  // the 1e-7 * x of exact arithmetic. Zeros and the mean fail it on the normalized error, as would a correct kernel.
  auto noise = filter.judge(
      task("noise", {node("aten::mul.Scalar", {"%x", 1.0000001}, "m"), node("aten::sub.Tensor", {"%m", "%x"}, "y")}));
  ASSERT_TRUE(noise) << noise.error();
  ASSERT_TRUE(noise->reason);
  EXPECT_EQ(reason_name(*noise->reason), "noise-output") << noise->detail;
  EXPECT_EQ(noise->record["reject"]["reason"], "noise-output");
  EXPECT_NE(noise->detail.find("the float64 run, rounded, fails verification at 0.5 of the tolerance"),
            std::string::npos)
      << noise->detail;

  // 1e-4 * x + 1e-4 * x * x is as small, but float32 computes it to a few ulps: kept, its rounding recorded.
  auto legit = filter.judge(
      task("small", {node("aten::mul.Tensor", {"%x", "%x"}, "q"), node("aten::add.Tensor", {"%x", "%q"}, "s"),
                     node("aten::mul.Scalar", {"%s", 1e-4}, "y")}));
  ASSERT_TRUE(legit) << legit.error();
  EXPECT_FALSE(legit->reason) << legit->detail;
  EXPECT_LT(legit->record["filter"]["rounding"].get<double>(), 1e-6);

  // With the check off the noise task passes every other check: nothing else catches it.
  FilterOptions off = fast_options();
  off.rounding_share = 0;
  TaskFilter unchecked(off);
  EXPECT_EQ(reason_of(unchecked, task("noise", {node("aten::mul.Scalar", {"%x", 1.0000001}, "m"),
                                                node("aten::sub.Tensor", {"%m", "%x"}, "y")})),
            "kept");
}

TEST(Filter, RandomOps) {
  EXPECT_TRUE(is_random_op("aten::bernoulli.p"));
  EXPECT_TRUE(is_random_op("aten::dropout"));
  EXPECT_TRUE(is_random_op("aten::randn_like"));
  EXPECT_TRUE(is_random_op("aten::normal.Tensor_float"));
  EXPECT_FALSE(is_random_op("aten::layer_norm"));
  EXPECT_FALSE(is_random_op("aten::scaled_dot_product_attention"));
  EXPECT_FALSE(is_random_op("aten::relu"));
}

}  // namespace
}  // namespace ca
