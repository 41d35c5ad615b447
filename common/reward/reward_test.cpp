#include "reward/reward.h"

#include <gtest/gtest.h>

namespace ca {
namespace {

Json record(bool ok, Json profile = nullptr) {
  Json r = {{"kind", "candidate"},
            {"task_id", "t"},
            {"verify", {{"ok", ok}, {"stage", ok ? "" : "compare"}, {"message", ok ? "" : "max_abs 3.2"}}}};
  if (!profile.is_null()) r["profile"] = profile;
  return r;
}

Json speeds(double eager, double compile) {
  Json s = {{"vs_eager", eager}};
  if (compile > 0) s["vs_compile"] = compile;
  return {{"speedup", s}};
}

double value_of(const Json& r, RewardOptions options = {}) {
  auto out = add_reward(r, options);
  EXPECT_TRUE(out) << out.error();
  return (*out)["reward"]["value"].get<double>();
}

}  // namespace

TEST(RewardTest, PaperRule) {
  EXPECT_EQ(value_of(record(false, speeds(9, 9))), -1);
  EXPECT_EQ(value_of(record(true)), 1);
  EXPECT_EQ(value_of(record(true, speeds(1.04, 2.0))), 1);
  EXPECT_EQ(value_of(record(true, speeds(1.06, 1.0))), 2);
  EXPECT_EQ(value_of(record(true, speeds(1.5, 1.06))), 3);
}

TEST(RewardTest, AHugeSpeedupIsWrittenWholeInTheReason) {
  auto out = add_reward(record(true, speeds(1e40, 2e39)), {});
  ASSERT_TRUE(out);
  std::string reason = (*out)["reward"]["reason"];
  EXPECT_NE(reason.find("speedup 1.00e+40x over eager, 2.00e+39x over compile"), std::string::npos) << reason;
}

TEST(RewardTest, NoCompileBaselineCapsAtTwoAndSaysWhy) {
  auto out = add_reward(record(true, speeds(3.0, 0)), {});
  ASSERT_TRUE(out);
  EXPECT_EQ((*out)["reward"]["value"], 2);
  EXPECT_NE((*out)["reward"]["reason"].get<std::string>().find("without a compile baseline"), std::string::npos);
}

TEST(RewardTest, ThresholdsAreOptions) {
  RewardOptions strict;
  strict.eager_threshold = 1.5;
  EXPECT_EQ(value_of(record(true, speeds(1.2, 1.2)), strict), 1);
}

TEST(RewardTest, FailureReasonNamesStage) {
  auto out = add_reward(record(false), {});
  ASSERT_TRUE(out);
  EXPECT_EQ((*out)["reward"]["reason"], "verification failed at stage 'compare': max_abs 3.2");
  EXPECT_EQ((*out)["kind"], "candidate") << "other fields pass through";
}

TEST(RewardTest, VariantsAndErrors) {
  RewardOptions binary{RewardRule::binary};
  EXPECT_EQ(value_of(record(true, speeds(5, 5)), binary), 1);
  RewardOptions log_rule{RewardRule::log_speedup};
  EXPECT_DOUBLE_EQ(value_of(record(true, speeds(8, 4)), log_rule), 3.0);
  EXPECT_FALSE(add_reward(Json{{"kind", "candidate"}}, {}));
  EXPECT_EQ(parse_reward_rule("papr").error(),
            "unknown rule 'papr', did you mean 'paper'? (one of 'paper', 'binary', 'log-speedup')");
}

}  // namespace ca

namespace ca {

TEST(RewardTest, FailedProfileIsWrongButSkippedProfileCapsAtOne) {
  Json wrong_while_timed = speeds(5, 5);
  wrong_while_timed.update(
      {{"ok", false}, {"stage", "compare"}, {"message", "round 2/5, call 3, output 0: max_abs 1"}});
  auto out = add_reward(record(true, wrong_while_timed), {});
  ASSERT_TRUE(out);
  EXPECT_EQ((*out)["reward"]["value"], -1);
  EXPECT_NE((*out)["reward"]["reason"].get<std::string>().find("profiling failed at stage 'compare'"),
            std::string::npos);
  EXPECT_EQ(value_of(record(true, {{"ok", false}, {"skipped", "verification failed"}})), 1);
  Json fine = speeds(5, 5);
  fine["ok"] = true;
  EXPECT_EQ(value_of(record(true, fine)), 3);
}

}  // namespace ca
