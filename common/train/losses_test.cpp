// Unit tests of the losses and estimators: hand-computed cases, then every function against the PyTorch
// reference tests/train/reference.py on the same random tensors (float64, equal within 1e-6).
#include "train/losses.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

namespace ca::train {
namespace {

at::Tensor row(std::initializer_list<double> v) {
  return at::tensor(std::vector<double>(v), at::kDouble).unsqueeze(0);
}

TEST(GaeTest, SkipsToolTokensAndPutsRewardOnLastActionToken) {
  // Action tokens at 1, 2, 4 (3 is a tool result); reward 1 on token 4.
  const at::Tensor mask = row({0, 1, 1, 0, 1});
  const Gae g = gae(row({0, 0, 0, 0, 1}), row({9, 0.5, 0.6, 9, 0.8}), mask);
  const std::vector<double> adv = {0, 0.4705, 0.39, 0, 0.2};
  for (int i = 0; i < 5; ++i) {
    EXPECT_NEAR(g.advantages[0][i].item<double>(), adv[i], 1e-12) << i;
    // lambda 1 and gamma 1: the Monte-Carlo return, the terminal reward, on every action token.
    EXPECT_NEAR(g.returns[0][i].item<double>(), mask[0][i].item<double>(), 1e-12) << i;
  }
}

TEST(PpoLossTest, ClipHigherAndDualClipCases) {
  // (ratio, A): (1.5, 1) clipped at 1.28; (0.5, -1) clipped at 0.8; (5, -1) dual-clipped at 3; (0.7, 1) unclipped.
  const at::Tensor ratio = row({1.5, 0.5, 5.0, 0.7});
  const PpoLoss l = ppo_policy_loss(ratio.log(), at::zeros_like(ratio), row({1, -1, -1, 1}), at::ones_like(ratio));
  EXPECT_NEAR(l.loss.item<double>(), (-1.28 + 0.8 + 3.0 - 0.7) / 4, 1e-12);
  EXPECT_NEAR(l.clip_fraction.item<double>(), 0.5, 1e-12);
}

TEST(PpoLossTest, MaskedTokensDoNotCount) {
  const at::Tensor ratio = row({1.5, 100.0});
  const PpoLoss l = ppo_policy_loss(ratio.log(), at::zeros_like(ratio), row({1, 1}), row({1, 0}));
  EXPECT_NEAR(l.loss.item<double>(), -1.28, 1e-12);
}

TEST(ValueLossTest, TakesTheWorseOfClippedAndUnclipped) {
  // V 1.0 from V_old 0.5 clips to 0.7; R 2: max(1, 1.69) / 2.
  EXPECT_NEAR(value_loss(row({1.0}), row({0.5}), row({2.0}), row({1})).item<double>(), 0.845, 1e-12);
  EXPECT_NEAR(value_loss(row({1.0}), row({0.5}), row({2.0}), row({1}), 0).item<double>(), 0.5, 1e-12);
}

TEST(KlTest, K3IsZeroAtEqualityAndPositiveElsewhere) {
  // log ratio ref - lp = log(0.5): 0.5 - log(0.5) - 1.
  EXPECT_NEAR(kl_k3(row({std::log(0.5)}), row({std::log(0.25)}))[0][0].item<double>(), 0.5 + std::log(2.0) - 1, 1e-12);
  EXPECT_EQ(kl_k3(row({-1.3}), row({-1.3}))[0][0].item<double>(), 0.0);
}

TEST(GroupAdvantagesTest, NormalizesWithinEachGroup) {
  const at::Tensor a =
      group_advantages(at::tensor(std::vector<double>{1, 0, 1, 0, 2, 2, 2, 2}, at::kDouble).view({2, 4}));
  EXPECT_NEAR(a[0][0].item<double>(), 0.5 / std::sqrt(1.0 / 3), 1e-5);
  EXPECT_NEAR(a[0][1].item<double>(), -0.5 / std::sqrt(1.0 / 3), 1e-5);
  EXPECT_EQ(a[1].abs().sum().item<double>(), 0.0);  // equal rewards: no signal
}

TEST(WhitenTest, ZeroMeanUnitVarianceOverTheMask) {
  const at::Tensor mask = row({1, 1, 0, 1});
  const at::Tensor w = whiten(row({1, 2, 100, 3}), mask);
  EXPECT_NEAR(masked_mean(w, mask).item<double>(), 0.0, 1e-12);
  EXPECT_NEAR(masked_mean(w.square(), mask).item<double>(), 1.0, 1e-6);
  EXPECT_EQ(w[0][2].item<double>(), 0.0);
}

TEST(ExplainedVarianceTest, OneForPerfectZeroForConstantNanForConstantReturns) {
  const at::Tensor r = row({1, 2, 3, 4});
  const at::Tensor m = at::ones_like(r);
  EXPECT_NEAR(explained_variance(r, r, m), 1.0, 1e-12);
  EXPECT_NEAR(explained_variance(at::full_like(r, 7.0), r, m), 0.0, 1e-12);
  EXPECT_TRUE(std::isnan(explained_variance(r, at::ones_like(r), m)));
}

TEST(VarianceSumsTest, SharesOfABatchAddUpToItsExplainedVariance) {
  // Two ranks' rows of one batch: their sums added give explained_variance of the whole batch.
  at::manual_seed(3);
  const at::Tensor v = at::randn({4, 9}, at::kDouble), r = at::randn({4, 9}, at::kDouble) + 0.5;
  const at::Tensor m = (at::rand({4, 9}, at::kDouble) > 0.3).to(at::kDouble);
  VarianceSums a, b;
  a.add(v.slice(0, 0, 1), r.slice(0, 0, 1), m.slice(0, 0, 1));
  a.add(v.slice(0, 2, 3), r.slice(0, 2, 3), m.slice(0, 2, 3));
  b.add(v.slice(0, 1, 2), r.slice(0, 1, 2), m.slice(0, 1, 2));
  b.add(v.slice(0, 3, 4), r.slice(0, 3, 4), m.slice(0, 3, 4));
  for (size_t k = 0; k < a.sums.size(); ++k) {
    a.sums[k] += b.sums[k];
  }
  EXPECT_NEAR(a.explained_variance(), explained_variance(v, r, m), 1e-12);
  EXPECT_NEAR(a.value_mean(), masked_mean(v, m).item<double>(), 1e-12);
  EXPECT_NEAR(a.return_mean(), masked_mean(r, m).item<double>(), 1e-12);
  VarianceSums constant;
  constant.add(v, at::full_like(r, 2.0), m);
  EXPECT_TRUE(std::isnan(constant.explained_variance()));
  EXPECT_TRUE(std::isnan(VarianceSums().explained_variance()));
}

TEST(NllTest, TokenMeanOverMaskedTokens) {
  // Two tokens of vocabulary 2 with uniform logits: every logprob is log(1/2).
  const at::Tensor logits = at::zeros({1, 3, 2}, at::kDouble);
  const at::Tensor ids = at::tensor(std::vector<int64_t>{0, 1, 0}).unsqueeze(0);
  const at::Tensor lp = token_logprobs(logits, ids);
  EXPECT_EQ(lp[0][0].item<double>(), 0.0);
  EXPECT_NEAR(masked_nll(lp, row({0, 1, 1})).item<double>(), std::log(2.0), 1e-12);
  EXPECT_NEAR(token_entropy(logits)[0][2].item<double>(), std::log(2.0), 1e-12);
}

// ---- against the PyTorch reference ----

nlohmann::json to_json(const at::Tensor& t) {
  const at::Tensor c = t.detach().to(at::kDouble).contiguous();
  return {{"shape", c.sizes().vec()},
          {"data", std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel())}};
}

at::Tensor from_json(const nlohmann::json& j) {
  return at::tensor(j["data"].get<std::vector<double>>(), at::kDouble).view(j["shape"].get<std::vector<int64_t>>());
}

TEST(ReferenceTest, EveryFunctionEqualsPyTorchOnRandomTensors) {
  const std::filesystem::path python = std::filesystem::path(CA_SOURCE_DIR) / ".venv/bin/python";
  ASSERT_TRUE(std::filesystem::exists(python)) << python << " is missing: make venv";
  at::manual_seed(19);
  const int64_t B = 3, T = 9, V = 11;
  const at::TensorOptions f64 = at::TensorOptions().dtype(at::kDouble);
  const at::Tensor logits = at::randn({B, T, V}, f64) * 2;
  const at::Tensor ids = at::randint(0, V, {B, T}, at::TensorOptions().dtype(at::kLong));
  // Prompt first, a tool result in the middle, padding at the end of row 2.
  const at::Tensor mask = at::tensor(std::vector<double>{0, 0, 1, 1, 0, 0, 1, 1, 1,  //
                                                         0, 1, 1, 1, 1, 0, 1, 0, 0,  //
                                                         0, 0, 0, 1, 1, 1, 1, 0, 0},
                                     f64)
                              .view({B, T});
  at::Tensor rewards = at::zeros({B, T}, f64);
  rewards[0][8] = 1.0;
  rewards[1][6] = 0.3;  // the last action token of row 1 (the tokens after it are padding)
  rewards[2][6] = -1.0;
  const at::Tensor values = at::randn({B, T}, f64) * 0.5;
  const at::Tensor new_values = values + at::randn({B, T}, f64) * 0.3;
  const at::Tensor old_logprobs = -at::rand({B, T}, f64) * 3;
  const at::Tensor new_logprobs = old_logprobs + at::randn({B, T}, f64) * 0.4;
  const at::Tensor ref_logprobs = old_logprobs + at::randn({B, T}, f64) * 0.2;
  const at::Tensor group_rewards = at::tensor(std::vector<double>{1, 0, 0.5, 1, 0, 0, 0, 1}, f64).view({2, 4});

  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("ca_train_ref_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  nlohmann::json in = {{"logits", to_json(logits)},
                       {"ids", to_json(ids)},
                       {"mask", to_json(mask)},
                       {"rewards", to_json(rewards)},
                       {"values", to_json(values)},
                       {"new_values", to_json(new_values)},
                       {"old_logprobs", to_json(old_logprobs)},
                       {"new_logprobs", to_json(new_logprobs)},
                       {"ref_logprobs", to_json(ref_logprobs)},
                       {"group_rewards", to_json(group_rewards)}};
  std::ofstream(dir / "in.json") << in.dump();
  const std::string cmd = python.string() + " " + CA_SOURCE_DIR + "/tests/train/reference.py " +
                          (dir / "in.json").string() + " " + (dir / "out.json").string();
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const nlohmann::json ref = nlohmann::json::parse(std::ifstream(dir / "out.json"));
  std::filesystem::remove_all(dir);

  const Gae g = gae(rewards, values, mask);
  const at::Tensor white = whiten(g.advantages, mask);
  const PpoLoss ppo = ppo_policy_loss(new_logprobs, old_logprobs, white, mask);
  const at::Tensor lp = token_logprobs(logits, ids);
  const std::map<std::string, at::Tensor> ours = {
      {"token_logprobs", lp},
      {"token_entropy", token_entropy(logits)},
      {"nll", masked_nll(lp, mask)},
      {"advantages", g.advantages},
      {"returns", g.returns},
      {"whitened", white},
      {"group_advantages", group_advantages(group_rewards)},
      {"ppo_loss", ppo.loss},
      {"clip_fraction", ppo.clip_fraction},
      {"value_loss", value_loss(new_values, values, g.returns, mask)},
      {"kl_k3", kl_k3(new_logprobs, ref_logprobs)},
      {"explained_variance", at::scalar_tensor(explained_variance(new_values, g.returns, mask), f64)},
  };
  for (const auto& [name, value] : ours) {
    ASSERT_TRUE(ref.contains(name)) << name;
    const at::Tensor expected = from_json(ref[name]);
    ASSERT_EQ(expected.numel(), value.numel()) << name;
    const double diff = (value.to(at::kDouble).reshape(expected.sizes()) - expected).abs().max().item<double>();
    EXPECT_LE(diff, 1e-6) << name;
  }
  // The case split must have been exercised: some tokens clipped, some not, some advantages negative.
  EXPECT_GT(ppo.clip_fraction.item<double>(), 0.0);
  EXPECT_LT(ppo.clip_fraction.item<double>(), 1.0);
}

}  // namespace
}  // namespace ca::train
