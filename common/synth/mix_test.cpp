#include "synth/mix.h"

#include <cmath>

#include <gtest/gtest.h>

namespace ca {
namespace {

TEST(ParseMixTest, ReadsFiveWeights) {
  auto mix = parse_mix("3.4,83.8,7.6,2.8,1.2");
  ASSERT_TRUE(mix) << mix.error();
  EXPECT_EQ(*mix, k_paper_mix);
  EXPECT_EQ(format_mix(k_paper_mix), "3.4,83.8,7.6,2.8,1.2");
}

TEST(ParseMixTest, NamesWhatIsWrong) {
  EXPECT_EQ(parse_mix("1,2,3").error(), "--mix: expected 5 numbers (tasks of 1..5 ops), got 3");
  EXPECT_EQ(parse_mix("1,2,x,4,5").error(), "--mix: 'x' is not a number");
  EXPECT_EQ(parse_mix("1,2,,4,5").error(), "--mix: '' is not a number");
  EXPECT_EQ(parse_mix("1,-2,3,4,5").error(), "--mix: weights must be finite and >= 0, got -2");
  EXPECT_EQ(parse_mix("0,0,0,0,0").error(), "--mix: the weights are all zero");
}

TEST(MixScheduleTest, EveryPrefixFollowsTheMix) {
  MixSchedule schedule(k_paper_mix);
  std::array<int, 5> made{};
  for (int n = 1; n <= 1000; ++n) {
    int ops = schedule.next();
    schedule.made(ops);
    ++made[size_t(ops - 1)];
    for (size_t i = 0; i < 5; ++i) {
      double share = k_paper_mix[i] / 98.8 * n;
      ASSERT_LE(std::abs(made[i] - share), 1.0) << "after " << n << " tasks, " << i + 1 << " ops";
    }
  }
}

TEST(MixScheduleTest, ZeroWeightsAreNeverScheduled) {
  MixSchedule schedule({0, 0, 1, 0, 0});
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(schedule.next(), 3);
    schedule.made(3);
  }
}

TEST(MixScheduleTest, AskAgainUntilMade) {
  MixSchedule schedule({0, 0, 0, 0, 1});
  EXPECT_EQ(schedule.next(), 5);
  EXPECT_EQ(schedule.next(), 5);  // a failed attempt does not move the schedule
}

}  // namespace
}  // namespace ca
