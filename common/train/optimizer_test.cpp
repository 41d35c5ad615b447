// Tests of AdamW (one update by hand), gradient clipping, and the state file round trip.
#include "train/optimizer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

namespace ca::train {
namespace {

at::Tensor param(double value, double grad) {
  at::Tensor p = at::full({1}, value, at::kFloat).set_requires_grad(true);
  p.mutable_grad() = at::full({1}, grad, at::kFloat);
  return p;
}

TEST(AdamWTest, FirstUpdateIsLrTimesGradientSignPlusDecay) {
  at::Tensor p = param(1.0, 0.5);
  AdamW adam({{"w", p}}, AdamWOptions{0.9, 0.999, 1e-8, 0.01});
  adam.step(0.1);
  // m^ = g, v^ = g^2: p (1 - 0.1 * 0.01) - 0.1 * g / |g|.
  EXPECT_NEAR(p.item<double>(), 0.999 - 0.1, 1e-6);
  EXPECT_EQ(adam.steps(), 1);
}

TEST(AdamWTest, SecondUpdateUsesBiasCorrectedMoments) {
  at::Tensor p = param(0.0, 1.0);
  AdamW adam({{"w", p}}, AdamWOptions{0.9, 0.999, 1e-8, 0.0});
  adam.step(0.1);
  p.mutable_grad().fill_(-1.0);
  adam.step(0.1);
  const double m = 0.9 * 0.1 - 0.1, v = 0.999 * 0.001 + 0.001;
  const double expected = -0.1 - 0.1 * (m / (1 - 0.81)) / (std::sqrt(v / (1 - 0.999 * 0.999)) + 1e-8);
  EXPECT_NEAR(p.item<double>(), expected, 1e-6);
}

TEST(ClipGradNormTest, ScalesOnlyAboveTheBound) {
  at::Tensor a = param(0, 3.0), b = param(0, 4.0);
  EXPECT_NEAR(clip_grad_norm({{"a", a}, {"b", b}}, 10.0), 5.0, 1e-9);
  EXPECT_NEAR(a.grad().item<double>(), 3.0, 1e-9);
  EXPECT_NEAR(clip_grad_norm({{"a", a}, {"b", b}}, 1.0), 5.0, 1e-9);
  EXPECT_NEAR(std::hypot(a.grad().item<double>(), b.grad().item<double>()), 1.0, 1e-5);
}

TEST(AdamWTest, SavedStateResumesTheSameTrajectory) {
  const auto dir = std::filesystem::temp_directory_path() / ("ca_train_adam_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  at::Tensor p = param(1.0, 0.3), q = param(1.0, 0.3);
  AdamW a({{"w", p}}, {});
  a.step(0.01);
  ASSERT_TRUE(a.save(dir / "opt.safetensors"));
  q.detach().copy_(p.detach());
  AdamW b({{"w", q}}, {});
  ASSERT_TRUE(b.load(dir / "opt.safetensors", a.steps()));
  p.mutable_grad().fill_(-0.7);
  q.mutable_grad().fill_(-0.7);
  a.step(0.01);
  b.step(0.01);
  EXPECT_EQ(p.item<float>(), q.item<float>());
  auto missing = b.load(dir / "absent.safetensors", 1);
  EXPECT_FALSE(missing);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ca::train
