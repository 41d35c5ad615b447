// Tests of the shared training loop's pieces: the warm-up schedule, the data order that makes resume exact, and
// the padded batches.
#include "train/trainer.h"

#include <gtest/gtest.h>

#include <set>

namespace ca::train {
namespace {

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

TEST(MicroBatchesTest, CutsInOrderWithAShortLastPiece) {
  const std::vector<size_t> which{4, 1, 3, 0, 2};
  EXPECT_EQ(micro_batches(which, 2), (std::vector<std::vector<size_t>>{{4, 1}, {3, 0}, {2}}));
  EXPECT_EQ(micro_batches(which, 8), (std::vector<std::vector<size_t>>{which}));
}

TEST(MakeBatchTest, PadsOnTheRightAndPutsTheRewardOnTheLastActionToken) {
  std::vector<Sequence> data(2);
  data[0].ids = {5, 6, 7, 8};
  data[0].mask = {0, 1, 1, 0};
  data[0].reward = 2.5;
  data[1].ids = {9, 10};
  data[1].mask = {0, 1};
  data[1].reward = -1;
  const Batch b = make_batch(data, {1, 0});
  ASSERT_EQ(b.ids.sizes(), (at::IntArrayRef{2, 4}));
  EXPECT_TRUE(b.ids.equal(at::tensor({9, 10, 0, 0, 5, 6, 7, 8}, at::kLong).view({2, 4})));
  EXPECT_TRUE(b.key_mask.equal(at::tensor({1, 1, 0, 0, 1, 1, 1, 1}, at::kLong).view({2, 4}).to(at::kBool)));
  EXPECT_TRUE(b.mask.equal(at::tensor({0.F, 1.F, 0.F, 0.F, 0.F, 1.F, 1.F, 0.F}).view({2, 4})));
  EXPECT_TRUE(b.rewards.equal(at::tensor({0.F, -1.F, 0.F, 0.F, 0.F, 0.F, 2.5F, 0.F}).view({2, 4})));
  EXPECT_EQ(b.tokens, 6);
  EXPECT_EQ(b.action_tokens, 3);
}

}  // namespace
}  // namespace ca::train
