// Tests of RFT's keep/drop rules, the warm-up schedule and the data order that makes resume exact.
#include "train/rft.h"

#include <gtest/gtest.h>

#include <set>

namespace ca::train {
namespace {

Json episode(double reward) {
  Json t = Json::parse(R"({"reward": {"value": 0},
    "tools": [{"type": "function", "function": {"name": "verify"}}, {"type": "function", "function": {"name": "bash"}}],
    "messages": [{"role": "user", "content": "x"}], "turns": []})");
  t["reward"]["value"] = reward;
  return t;
}

void add_turn(Json& t, const std::string& name, const std::string& args, bool ok) {
  Json call = {{"id", "c"}, {"type", "function"}, {"function", {{"name", name}, {"arguments", args}}}};
  t["messages"].push_back({{"role", "assistant"}, {"content", ""}, {"tool_calls", Json::array({call})}});
  t["messages"].push_back({{"role", "tool"}, {"content", ok ? "ok" : "error"}});
  t["turns"].push_back({{"tools", Json::array({{{"name", name}, {"ok", ok}}})}});
}

TEST(RftRejectionTest, KeepsAPositiveCleanEpisode) {
  Json t = episode(1.0);
  add_turn(t, "verify", "{}", true);
  EXPECT_EQ(rft_rejection(t, {}), std::nullopt);
}

TEST(RftRejectionTest, DropsZeroRewardAndMissingReward) {
  EXPECT_EQ(rft_rejection(episode(0.0), {}), "reward <= 0");
  EXPECT_EQ(rft_rejection(episode(-1.0), {}), "reward <= 0");
  Json t = episode(1.0);
  t.erase("reward");
  EXPECT_EQ(rft_rejection(t, {}), "no reward");
}

TEST(RftRejectionTest, DropsInvalidCallsUnlessAsked) {
  Json unknown = episode(1.0);
  add_turn(unknown, "rm_rf", "{}", true);
  EXPECT_EQ(rft_rejection(unknown, {}), "invalid tool call 'rm_rf'");
  Json bad_args = episode(1.0);
  add_turn(bad_args, "bash", "{\"command\": ", true);
  EXPECT_EQ(rft_rejection(bad_args, {}), "invalid tool call 'bash'");
  RftFilter keep;
  keep.keep_invalid_calls = true;
  EXPECT_EQ(rft_rejection(bad_args, keep), std::nullopt);
}

TEST(RftRejectionTest, DropsAnIdenticalCallFailingAgainButNotDifferentFailures) {
  Json t = episode(1.0);
  add_turn(t, "bash", R"({"command": "make"})", false);
  add_turn(t, "bash", R"({"command": "make -j"})", false);
  EXPECT_EQ(rft_rejection(t, {}), std::nullopt);
  add_turn(t, "bash", R"({"command": "make"})", false);
  EXPECT_EQ(rft_rejection(t, {}), "repeated failing call 'bash' (2 times)");
  RftFilter lenient;
  lenient.max_repeated_failures = 2;
  EXPECT_EQ(rft_rejection(t, lenient), std::nullopt);
}

TEST(RftRejectionTest, DropsEpisodesOverTheTurnBound) {
  Json t = episode(1.0);
  for (int i = 0; i < 3; ++i) {
    add_turn(t, "verify", "{}", true);
  }
  RftFilter bound;
  bound.max_turns = 2;
  EXPECT_EQ(rft_rejection(t, bound), "turns 3 > 2");
  bound.max_turns = 3;
  EXPECT_EQ(rft_rejection(t, bound), std::nullopt);
}

TEST(WarmupTest, RisesLinearlyThenHolds) {
  EXPECT_DOUBLE_EQ(warmup_lr(1.0, 4, 0), 0.25);
  EXPECT_DOUBLE_EQ(warmup_lr(1.0, 4, 3), 1.0);
  EXPECT_DOUBLE_EQ(warmup_lr(1.0, 4, 100), 1.0);
  EXPECT_DOUBLE_EQ(warmup_lr(1.0, 0, 0), 1.0);
}

TEST(StepIndicesTest, EachEpochVisitsEverySequenceOnceAndDependsOnlyOnStepAndSeed) {
  std::multiset<size_t> seen;
  for (int64_t step = 0; step < 5; ++step) {  // 5 updates of 2 over 10 sequences: one epoch
    for (size_t i : step_indices(10, 2, step, 7)) {
      seen.insert(i);
    }
  }
  for (size_t i = 0; i < 10; ++i) {
    EXPECT_EQ(seen.count(i), 1u) << i;
  }
  EXPECT_EQ(step_indices(10, 3, 4, 7), step_indices(10, 3, 4, 7));
  EXPECT_NE(step_indices(10, 10, 0, 7), step_indices(10, 10, 0, 8));
  EXPECT_NE(step_indices(10, 10, 0, 7), step_indices(10, 10, 1, 7));  // a new epoch, a new order
}

}  // namespace
}  // namespace ca::train
