#include "aten/compare.h"

#include <cmath>

#include <gtest/gtest.h>

namespace ca {
namespace {

at::Tensor values(std::vector<double> v) { return at::tensor(v, at::kFloat); }

TEST(CompareTest, EqualWithinToleranceIsOk) {
  EXPECT_TRUE(compare_output(values({1.0, 2.0, 3.0}), values({1.0, 2.005, 3.0}), {}).ok);
}

TEST(CompareTest, OffByMoreThanToleranceNamesTheElement) {
  Comparison c = compare_output(values({1.0, 2.5, 3.0}), values({1.0, 2.0, 3.0}), {});
  EXPECT_FALSE(c.ok);
  EXPECT_NE(c.message.find("mismatch at [1]"), std::string::npos) << c.message;
}

TEST(CompareTest, NonFiniteWhereTheReferenceIsFiniteFails) {
  Comparison c = compare_output(values({1.0, NAN}), values({1.0, 2.0}), {});
  EXPECT_FALSE(c.ok);
  EXPECT_NE(c.message.find("NaN at [1]"), std::string::npos) << c.message;
}

// Where the reference is NaN or Inf the output must match it exactly: a finite value there is wrong.
TEST(CompareTest, FiniteWhereTheReferenceIsNotFiniteFails) {
  EXPECT_FALSE(compare_output(values({1.0, 0.0}), values({1.0, NAN}), {}).ok);
  EXPECT_FALSE(compare_output(values({1.0, 1e30}), values({1.0, INFINITY}), {}).ok);
  EXPECT_FALSE(compare_output(values({1.0, -INFINITY}), values({1.0, INFINITY}), {}).ok);
  EXPECT_TRUE(compare_output(values({1.0, NAN, INFINITY}), values({1.0, NAN, INFINITY}), {}).ok);
}

}  // namespace
}  // namespace ca
