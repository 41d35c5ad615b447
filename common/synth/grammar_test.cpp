#include "synth/grammar.h"

#include <gtest/gtest.h>

namespace ca {
namespace {

OpTemplate op(const std::string& name, const std::string& overload, const std::string& category) {
  Json record = {{"kind", "op"}, {"name", name}, {"overload", overload}, {"category", category}, {"usable", true}};
  size_t unknown = 0;
  auto templates = op_templates({record}, unknown);
  EXPECT_EQ(templates.size(), 1u);
  return templates.at(0);
}

// Fills `op` on a primary of `shape` with every seed in [0, 40).
std::vector<std::pair<Node, Program>> fills(const OpTemplate& op, const std::vector<int64_t>& shape) {
  std::vector<std::pair<Node, Program>> out;
  for (uint64_t seed = 0; seed < 40; ++seed) {
    Program program;
    program.inputs.push_back({"x0", DType::float32, shape, {}});
    std::vector<SynthValue> values = {{"x0", shape, true}};
    Rng rng(seed);
    FillContext context{program, values, values[0], rng};
    std::string why;
    auto node = fill_node(op, context, "t0", why);
    EXPECT_TRUE(node) << why;
    if (node) out.push_back({*node, program});
  }
  return out;
}

TEST(GrammarTest, SkipsUnusableAndUnknownRecords) {
  size_t unknown = 0;
  auto templates = op_templates({{{"name", "aten::relu"}, {"overload", ""}, {"usable", false}},
                                 {{"name", "aten::no_such_op"}, {"overload", ""}, {"usable", true}}},
                                unknown);
  EXPECT_TRUE(templates.empty());
  EXPECT_EQ(unknown, 1u);
}

TEST(GrammarTest, PrimaryGoesFirstAndLinearGetsAWeightParam) {
  for (const auto& [node, program] : fills(op("aten::linear", "", "matmul"), {5, 64})) {
    EXPECT_EQ(node.args[0], "%x0");
    EXPECT_EQ(node.args[1], "%w0");
    ASSERT_FALSE(program.params.empty());
    EXPECT_EQ(program.params[0].init.dist, Dist::kaiming_uniform);
  }
}

TEST(GrammarTest, KernelSizeFollowsTheWeight) {
  for (const auto& [node, program] : fills(op("aten::slow_conv3d", "", "convolution"), {5, 4, 8, 8, 8})) {
    const auto& weight = program.params.at(0).shape;
    EXPECT_EQ(node.args[2], Json(std::vector<int64_t>(weight.begin() + 2, weight.end()))) << node.args.dump();
  }
}

TEST(GrammarTest, PermuteKeepsTheBatchDimFirst) {
  for (const auto& [node, program] : fills(op("aten::permute", "", "shape"), {5, 8, 16, 32})) {
    EXPECT_EQ(node.args[1][0], 0) << node.args.dump();
    EXPECT_EQ(node.args[1].size(), 4u);
  }
}

TEST(GrammarTest, ReshapeLeavesTheBatchToMinusOne) {
  for (const auto& [node, program] : fills(op("aten::reshape", "", "shape"), {5, 8, 16})) {
    EXPECT_EQ(node.args[1][0], -1) << node.args.dump();
  }
}

}  // namespace
}  // namespace ca
