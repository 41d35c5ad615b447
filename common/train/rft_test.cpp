// Tests of RFT's keep/drop rules.
#include "train/rft.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace ca::train
