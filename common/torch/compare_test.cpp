#include "torch/compare.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace ca {
namespace {

at::Tensor values(std::vector<double> v) {
  return at::tensor(v, at::kFloat);
}

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

// Past one chunk of the comparison (2^25 elements): indices, counts and norms are those of the whole tensor.
TEST(CompareTest, ALargeOutputIsComparedInChunksAsAWhole) {
  const int64_t n = (int64_t(1) << 25) + 1000;
  at::Tensor ref = at::ones({2, n / 2}, at::kFloat);
  at::Tensor out = ref.clone();
  out[1][n / 2 - 10] = 3.0f;  // in the second chunk
  out[1][n / 2 - 1] = 4.0f;
  for (ComparePath path : {ComparePath::fused, ComparePath::aten}) {
    Comparison c = compare_output(out, ref, {}, path);
    EXPECT_FALSE(c.ok);
    EXPECT_EQ(c.max_abs, 3.0);
    EXPECT_NEAR(c.rel_l2, std::sqrt(4.0 + 9.0) / std::sqrt(double(n)), 1e-12);
    EXPECT_NE(c.message.find("mismatch at [1, " + std::to_string(n / 2 - 10) + "]: got 3, expected 1 (2 of " +
                             std::to_string(n) + " elements off"),
              std::string::npos)
        << c.message;
  }
  out = ref.clone();
  out[0][7] = NAN;
  EXPECT_NE(compare_output(out, ref, {}).message.find("NaN at [0, 7]"), std::string::npos);
}

// The fused cpu pass and the ATen ops give one answer: verdict, the element a message names, and the statistics.
TEST(CompareTest, FusedAndAtenPathsAgree) {
  at::manual_seed(7);
  const int64_t n = 300000;  // several chunks of the fused pass
  at::Tensor ref = at::randn({n}, at::kFloat);
  ref[5] = NAN;
  ref[6] = INFINITY;
  ref.slice(0, 1000, 2000).zero_();
  std::vector<std::pair<std::string, at::Tensor>> outs;
  at::Tensor close = ref + 1e-3 * at::randn({n}, at::kFloat);
  outs.emplace_back("close", close);
  at::Tensor far = close.clone();
  far[200001] = far[200001] + 1;
  far[250000] = far[250000] - 2;
  outs.emplace_back("two far", far);
  at::Tensor unwritten = close.clone();
  unwritten[123456] = NAN;
  unwritten[299999] = INFINITY;
  outs.emplace_back("NaN and Inf", unwritten);
  at::Tensor finite_at_nan = close.clone();
  finite_at_nan[5] = 0.0;
  outs.emplace_back("finite where the reference is NaN", finite_at_nan);
  outs.emplace_back("scaled", ref * 1.5);
  for (const auto& [name, out] : outs) {
    Comparison fused = compare_output(out, ref, {}, ComparePath::fused);
    Comparison aten = compare_output(out, ref, {}, ComparePath::aten);
    EXPECT_EQ(fused.ok, aten.ok) << name;
    EXPECT_EQ(fused.message.substr(0, 40), aten.message.substr(0, 40)) << name;
    EXPECT_EQ(fused.max_abs, aten.max_abs) << name;
    EXPECT_EQ(fused.max_rel, aten.max_rel) << name;
    EXPECT_NEAR(fused.rel_l2, aten.rel_l2, 1e-12 * std::max(1.0, aten.rel_l2)) << name;
  }
  // Small against atol: only the normalized error sees it, on both paths.
  at::Tensor tiny = 1e-4 * at::randn({n}, at::kFloat);
  EXPECT_FALSE(compare_output(tiny * 2, tiny, {}, ComparePath::fused).ok);
  EXPECT_FALSE(compare_output(tiny * 2, tiny, {}, ComparePath::aten).ok);
  // Integers compare exactly through the same path.
  at::Tensor ints = at::arange(n, at::kLong);
  at::Tensor off = ints.clone();
  off[77777] = 0;
  EXPECT_EQ(compare_output(off, ints, {}, ComparePath::fused).message,
            compare_output(off, ints, {}, ComparePath::aten).message);
}

}  // namespace
}  // namespace ca
