#include "model/generate.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "model/transformer.h"
#include "util/atomic_file.h"

namespace ca::model {
namespace {

// The tiny checkpoints tests/cli/model_*.sh make; these unit tests need one and skip without it.
std::optional<Generator> tiny_generator() {
  const char* dir = std::getenv("CA_MODEL_TINY");
  if (dir == nullptr) {
    return std::nullopt;
  }
  auto g = Generator::load(dir);
  EXPECT_TRUE(g) << g.error();
  return g ? std::optional<Generator>(std::move(*g)) : std::nullopt;
}

#define TINY_OR_SKIP(g)                                                            \
  auto g = tiny_generator();                                                       \
  if (!g) {                                                                        \
    GTEST_SKIP() << "CA_MODEL_TINY not set (tests/cli/model_generate.sh sets it)"; \
  }

TEST(GeneratorTest, SameSeedSameTokensOtherSeedOtherTokens) {
  TINY_OR_SKIP(g);
  SamplingParams p{.temperature = 1.0, .top_p = 0.95, .top_k = 50, .seed = 11, .max_tokens = 16, .stop_ids = {}};
  std::vector<std::vector<int32_t>> prompts{{1, 2, 3, 4}, {5, 6}};
  auto a = g->generate(prompts, p), b = g->generate(prompts, p);
  p.seed = 12;
  auto c = g->generate(prompts, p);
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ((*a)[0].ids, (*b)[0].ids);
  EXPECT_EQ((*a)[1].ids, (*b)[1].ids);
  EXPECT_NE((*a)[0].ids, (*c)[0].ids);
  EXPECT_EQ((*a)[0].finish_reason, "length");
  EXPECT_EQ((*a)[0].ids.size(), 16u);
}

TEST(GeneratorTest, TopKOfOneIsGreedy) {
  TINY_OR_SKIP(g);
  std::vector<std::vector<int32_t>> prompts{{7, 8, 9}};
  auto greedy =
      g->generate(prompts, {.temperature = 0, .top_p = 1, .top_k = 0, .seed = 0, .max_tokens = 12, .stop_ids = {}});
  auto k1 =
      g->generate(prompts, {.temperature = 1.5, .top_p = 1, .top_k = 1, .seed = 3, .max_tokens = 12, .stop_ids = {}});
  ASSERT_TRUE(greedy && k1);
  EXPECT_EQ((*greedy)[0].ids, (*k1)[0].ids);
}

TEST(GeneratorTest, StopTokenEndsOnlyItsSequence) {
  TINY_OR_SKIP(g);
  std::vector<std::vector<int32_t>> prompts{{7, 8, 9}, {10, 11, 12, 13, 14}};
  SamplingParams p{.temperature = 0, .top_p = 1, .top_k = 0, .seed = 0, .max_tokens = 10, .stop_ids = {}};
  auto free_run = g->generate(prompts, p);
  ASSERT_TRUE(free_run);
  p.stop_ids = {(*free_run)[0].ids[2]};  // the first sequence's third token
  auto stopped = g->generate(prompts, p);
  ASSERT_TRUE(stopped);
  const auto& first = (*stopped)[0];
  EXPECT_EQ(first.finish_reason, "stop");
  EXPECT_LE(first.ids.size(), 3u);
  EXPECT_EQ(first.ids.back(), p.stop_ids[0]);
  EXPECT_EQ(first.logprobs.size(), first.ids.size());
  // The other sequence is unaffected unless it meets the same token.
  const auto& second = (*stopped)[1];
  const auto& second_free = (*free_run)[1].ids;
  EXPECT_TRUE(std::equal(second.ids.begin(), second.ids.end(), second_free.begin()));
}

TEST(GeneratorTest, LogprobsEqualARecomputationByOneForwardPass) {
  TINY_OR_SKIP(g);
  std::vector<int32_t> prompt{3, 1, 4, 1, 5, 9, 2, 6};
  auto out = g->generate({prompt},
                         {.temperature = 0.8, .top_p = 0.9, .top_k = 0, .seed = 5, .max_tokens = 20, .stop_ids = {}});
  ASSERT_TRUE(out);
  std::vector<int64_t> all(prompt.begin(), prompt.end());
  all.insert(all.end(), (*out)[0].ids.begin(), (*out)[0].ids.end());
  const auto n = static_cast<int64_t>(all.size());
  at::Tensor ids = at::tensor(all, at::kLong).view({1, n});
  at::Tensor logprobs = g->model().forward(ids, at::arange(n).view({1, n}), at::Tensor()).log_softmax(-1);
  double worst = 0;
  for (size_t k = 0; k < (*out)[0].ids.size(); ++k) {
    const int64_t at_pos = static_cast<int64_t>(prompt.size() + k) - 1;
    const double want = logprobs[0][at_pos][(*out)[0].ids[k]].item<double>();
    worst = std::max(worst, std::abs(want - (*out)[0].logprobs[k]));
  }
  EXPECT_LT(worst, 1e-4);
}

TEST(GeneratorTest, RejectsBadPrompts) {
  TINY_OR_SKIP(g);
  SamplingParams p;
  EXPECT_NE(g->generate({{}}, p).error().find("prompt 0 is empty"), std::string::npos);
  EXPECT_NE(g->generate({{1, 99999999}}, p).error().find("outside the vocabulary"), std::string::npos);
  p.max_tokens = 1 << 20;
  EXPECT_NE(g->generate({{1}}, p).error().find("max_position_embeddings"), std::string::npos);
}

TEST(GeneratorTest, LoadNamesBadArguments) {
  EXPECT_NE(Generator::load("/nonexistent", "cpu", "int8").error().find("dtype 'int8'"), std::string::npos);
  EXPECT_NE(Generator::load("/nonexistent", "tpu", "float32").error().find("device 'tpu'"), std::string::npos);
  EXPECT_NE(Generator::load("/nonexistent").error().find("/nonexistent/config.json"), std::string::npos);
}

// Greedy generation equals transformers' generate(): tests/cli/model_generate.sh writes CASE/model,
// CASE/prompts.json and CASE/expected.json (tests/model/generate_reference.py) under CA_MODEL_GENERATE_CASES.
TEST(GenerateReferenceTest, GreedyTokensAndLogprobsEqualTransformers) {
  const char* dir = std::getenv("CA_MODEL_GENERATE_CASES");
  if (dir == nullptr) {
    GTEST_SKIP() << "CA_MODEL_GENERATE_CASES not set (tests/cli/model_generate.sh sets it)";
  }
  int cases = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const auto c = entry.path();
    auto g = Generator::load(c / "model");
    ASSERT_TRUE(g) << g.error();
    const auto prompts =
        Json::parse(*read_file((c / "prompts.json").string())).get<std::vector<std::vector<int32_t>>>();
    const Json expected = Json::parse(*read_file((c / "expected.json").string()));
    const auto want_ids = expected["ids"].get<std::vector<std::vector<int32_t>>>();
    const auto want_lp = expected["logprobs"].get<std::vector<std::vector<double>>>();
    SamplingParams p{.temperature = 0,
                     .top_p = 1,
                     .top_k = 0,
                     .seed = 0,
                     .max_tokens = static_cast<int64_t>(want_ids[0].size()),
                     .stop_ids = {}};
    auto out = g->generate(prompts, p);
    ASSERT_TRUE(out) << out.error();
    double worst = 0;
    for (size_t b = 0; b < prompts.size(); ++b) {
      EXPECT_EQ((*out)[b].ids, want_ids[b]) << c << " prompt " << b;
      for (size_t k = 0; k < want_lp[b].size() && k < (*out)[b].logprobs.size(); ++k) {
        worst = std::max(worst, std::abs((*out)[b].logprobs[k] - want_lp[b][k]));
      }
    }
    std::printf("%s: %zu prompts, greedy tokens equal transformers', logprobs max abs diff %.3g\n",
                c.filename().c_str(), prompts.size(), worst);
    EXPECT_LE(worst, 1e-4);
    ++cases;
  }
  EXPECT_GE(cases, 1);
}

}  // namespace
}  // namespace ca::model
