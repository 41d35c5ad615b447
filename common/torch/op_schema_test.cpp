#include "torch/op_schema.h"

#include <gtest/gtest.h>

#include "torch/op_catalog.h"

namespace ca {
namespace {

const OpArgument& argument(const OpSchema& schema, const std::string& name) {
  for (const auto& argument : schema.arguments) {
    if (argument.name == name) return argument;
  }
  throw std::runtime_error("no argument " + name);
}

TEST(OpSchemaTest, ReadsKindsDefaultsAndKeywordOnlyArguments) {
  auto add = find_op_schema("aten::add", "Tensor");
  ASSERT_TRUE(add);
  ASSERT_EQ(add->arguments.size(), 3u);
  EXPECT_EQ(add->arguments[0].name, "self");
  EXPECT_EQ(add->arguments[0].kind, ArgKind::tensor);
  EXPECT_FALSE(add->arguments[0].has_default);
  const OpArgument& alpha = argument(*add, "alpha");
  EXPECT_EQ(alpha.kind, ArgKind::scalar);
  EXPECT_TRUE(alpha.has_default);
  EXPECT_TRUE(alpha.kwarg_only);
  EXPECT_FALSE(alpha.optional);
}

TEST(OpSchemaTest, ReadsOptionalTensorsAndFixedSizeLists) {
  auto layer_norm = find_op_schema("aten::layer_norm", "");
  ASSERT_TRUE(layer_norm);
  const OpArgument& weight = argument(*layer_norm, "weight");
  EXPECT_EQ(weight.kind, ArgKind::optional_tensor);
  EXPECT_TRUE(weight.optional);
  EXPECT_EQ(argument(*layer_norm, "normalized_shape").kind, ArgKind::int_list);
  EXPECT_EQ(argument(*layer_norm, "eps").kind, ArgKind::real);

  auto pool = find_op_schema("aten::avg_pool2d", "");
  ASSERT_TRUE(pool);
  const OpArgument& kernel_size = argument(*pool, "kernel_size");
  EXPECT_EQ(kernel_size.kind, ArgKind::int_list);
  EXPECT_EQ(kernel_size.fixed_size, 2);
  EXPECT_EQ(kernel_size.type, "int[]");  // the size is fixed_size
  EXPECT_EQ(argument(*pool, "divisor_override").kind, ArgKind::integer);
  EXPECT_TRUE(argument(*pool, "divisor_override").optional);
}

TEST(OpSchemaTest, UnknownOperatorIsNullopt) {
  EXPECT_FALSE(find_op_schema("aten::no_such_op", ""));
  EXPECT_FALSE(find_op_schema("aten::add", "NoSuchOverload"));
}

TEST(OpSchemaTest, SeededRandomByQualifiedName) {
  EXPECT_TRUE(seeded_random("aten::bernoulli.p"));
  EXPECT_TRUE(seeded_random("aten::randn_like"));
  EXPECT_FALSE(seeded_random("aten::scaled_dot_product_attention"));  // random only through dropout_p = 0
  EXPECT_FALSE(seeded_random("aten::relu"));
  EXPECT_FALSE(seeded_random("aten::no_such_op"));
}

}  // namespace
}  // namespace ca
