#include "model/local_policy.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "model/transformer.h"

namespace ca::model {
namespace {

TEST(LocalPolicyTest, TemplateMessagesParseStringArguments) {
  const Json m = Json::parse(R"([{"role": "assistant", "content": null, "tool_calls": [
      {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{\"command\": \"ls\"}"}},
      {"id": "c2", "type": "function", "function": {"name": "x", "arguments": "not json"}}]}])");
  const Json t = template_messages(m);
  EXPECT_EQ(t[0]["content"], "");
  EXPECT_EQ(t[0]["tool_calls"][0]["function"]["arguments"]["command"], "ls");
  EXPECT_EQ(t[0]["tool_calls"][1]["function"]["arguments"], "not json");
}

TEST(LocalPolicyTest, MissingCheckpointIsAnError) {
  auto p = make_local_policy("/nonexistent", {});
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().find("/nonexistent/config.json"), std::string::npos) << p.error();
}

// A turn's token ids and logprobs against one forward pass over the rendered prompt and the completion.
TEST(LocalPolicyTest, TurnLogprobsEqualARecomputation) {
  const char* dir = std::getenv("CA_MODEL_TINY");
  if (dir == nullptr) {
    GTEST_SKIP() << "CA_MODEL_TINY not set (tests/cli/model_generate.sh sets it)";
  }
  LocalPolicyOptions options;
  options.sampling.max_tokens = 24;
  options.sampling.temperature = 0.9;
  auto policy = make_local_policy(dir, options);
  ASSERT_TRUE(policy) << policy.error();
  (*policy)->begin(EpisodeInfo{Json::object(), "cpu", 7, 0});
  const Json messages = Json::parse(R"([{"role": "system", "content": "You write CUDA kernels."},
                                        {"role": "user", "content": "Make relu fast."}])");
  auto turn = (*policy)->next(messages, Json::array());
  ASSERT_TRUE(turn) << turn.error().message;
  ASSERT_FALSE(turn->token_ids.empty());
  ASSERT_EQ(turn->token_ids.size(), turn->logprobs.size());
  auto generator = Generator::load(dir);
  ASSERT_TRUE(generator);
  std::vector<int64_t> all = turn->extra["prompt_ids"].get<std::vector<int64_t>>();
  const size_t prompt = all.size();
  all.insert(all.end(), turn->token_ids.begin(), turn->token_ids.end());
  const auto n = static_cast<int64_t>(all.size());
  at::Tensor lp = generator->model()
                      .forward(at::tensor(all, at::kLong).view({1, n}), at::arange(n).view({1, n}), at::Tensor())
                      .log_softmax(-1);
  double worst = 0;
  for (size_t k = 0; k < turn->token_ids.size(); ++k) {
    worst = std::max(worst, std::abs(lp[0][static_cast<int64_t>(prompt + k) - 1][turn->token_ids[k]].item<double>() -
                                     turn->logprobs[k]));
  }
  std::printf("local policy turn: %zu tokens, logprobs against a forward pass: max abs diff %.3g\n",
              turn->token_ids.size(), worst);
  EXPECT_LT(worst, 1e-4);
  EXPECT_EQ((*policy)->describe()["name"], "local");
}

}  // namespace
}  // namespace ca::model
