// Tests of --dtype: bfloat16 autocast computes products in bfloat16, keeps float32 gradients, and sees a weight's
// in-place update at once (no stale cast); float32 turns it off again.
#include "train/precision.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <ATen/core/grad_mode.h>

namespace ca::train {
namespace {

TEST(PrecisionTest, Bfloat16AutocastOverFloat32Weights) {
  at::Tensor w = at::full({2, 3}, 0.5, at::kFloat).set_requires_grad(true);
  const at::Tensor x = at::full({1, 3}, 1.0, at::kFloat);
  ASSERT_TRUE(set_compute_dtype("cpu", "bfloat16"));
  const at::Tensor y = at::linear(x, w);
  EXPECT_EQ(y.scalar_type(), at::kBFloat16);
  y.to(at::kFloat).sum().backward();
  EXPECT_EQ(w.grad().scalar_type(), at::kFloat);
  EXPECT_DOUBLE_EQ(w.grad()[0][0].item<double>(), 1.0);
  {
    at::NoGradGuard no_grad;
    w.add_(1.0);  // an optimizer update
  }
  EXPECT_DOUBLE_EQ(at::linear(x, w)[0][0].item<double>(), 4.5);  // 3 * 1.5: the updated weight, not a cached cast
  ASSERT_TRUE(set_compute_dtype("cpu", "float32"));
  EXPECT_EQ(at::linear(x, w).scalar_type(), at::kFloat);
}

TEST(PrecisionTest, RejectsOtherDtypesAndDevices) {
  EXPECT_FALSE(set_compute_dtype("cpu", "float16"));
  EXPECT_FALSE(set_compute_dtype("gpu", "bfloat16"));
}

}  // namespace
}  // namespace ca::train
