#include "filter/similarity.h"

#include <gtest/gtest.h>

namespace ca {
namespace {

Program chain(const std::vector<std::string>& ops, std::vector<int64_t> shape = {8, 16}) {
  Json nodes = Json::array();
  std::string previous = "%x";
  for (size_t i = 0; i < ops.size(); ++i) {
    nodes.push_back({{"op", ops[i]}, {"args", {previous}}, {"out", {"t" + std::to_string(i)}}});
    previous = "%t" + std::to_string(i);
  }
  Json json = {{"inputs", {{{"name", "x"}, {"dtype", "float32"}, {"shape", shape}}}},
               {"params", Json::array()},
               {"nodes", nodes},
               {"outputs", {previous.substr(1)}}};
  auto program = parse_program(json);
  EXPECT_TRUE(program) << program.error();
  return *program;
}

TEST(FilterSimilarity, NormalizesNamesAndDropsViews) {
  EXPECT_EQ(normalize_op("aten::_softmax.default"), "softmax");
  EXPECT_EQ(normalize_op("aten::add.Tensor"), "add");
  EXPECT_EQ(normalize_op("aten::mm"), "matmul");
  EXPECT_EQ(normalize_op("aten::conv3d"), "conv");
  EXPECT_EQ(normalize_op("aten::view"), "");
  EXPECT_EQ(normalize_op("aten::clone"), "");
  EXPECT_EQ(join_ops(normalized_ops(chain({"aten::relu", "aten::clone", "aten::sigmoid"}))), "relu sigmoid");
}

TEST(FilterSimilarity, ShinglesAndJaccard) {
  EXPECT_EQ(op_shingles({"relu"}), (std::set<std::string>{"^ relu $"}));
  EXPECT_EQ(op_shingles({}), (std::set<std::string>{"^ $"}));
  auto a = op_shingles({"conv", "relu", "add"});
  auto b = op_shingles({"conv", "relu"});
  EXPECT_EQ(a.size(), 3u);
  EXPECT_DOUBLE_EQ(jaccard(a, a), 1.0);
  EXPECT_DOUBLE_EQ(jaccard(a, b), 1.0 / 4.0);  // "^ conv relu" shared of 4
  EXPECT_DOUBLE_EQ(jaccard(op_shingles({"relu"}), op_shingles({"relu", "add"})), 0.0);
}

TEST(FilterSimilarity, ReferenceSetIgnoresShapesAndViews) {
  ReferenceSet references;
  references.add("kb/relu", chain({"aten::relu"}, {4096, 4096}));
  references.add("kb/tanh_sigmoid", chain({"aten::tanh", "aten::sigmoid"}));
  auto match = references.best_match(chain({"aten::view", "aten::relu"}, {3, 5}));
  ASSERT_TRUE(match);
  EXPECT_EQ(match->id, "kb/relu");
  EXPECT_DOUBLE_EQ(match->similarity, 1.0);
  match = references.best_match(chain({"aten::tanh", "aten::gelu"}));
  ASSERT_TRUE(match);
  EXPECT_LT(match->similarity, 0.5);
  EXPECT_FALSE(ReferenceSet().best_match(chain({"aten::relu"})));
}

TEST(FilterSimilarity, NearDuplicateKeyHasShapesNotNames) {
  EXPECT_EQ(near_duplicate_key(chain({"aten::relu"}, {8, 16})), near_duplicate_key(chain({"aten::relu"}, {8, 16})));
  EXPECT_NE(near_duplicate_key(chain({"aten::relu"}, {8, 16})), near_duplicate_key(chain({"aten::relu"}, {8, 17})));
  EXPECT_NE(near_duplicate_key(chain({"aten::relu"})), near_duplicate_key(chain({"aten::sigmoid"})));
}

}  // namespace
}  // namespace ca
