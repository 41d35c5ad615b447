#include "synth/composer.h"

#include <set>

#include <gtest/gtest.h>

#include "torch/op_catalog.h"
#include "torch/task_check.h"

namespace ca {
namespace {

const std::vector<OpTemplate>& usable_ops() {
  static const std::vector<OpTemplate> ops = [] {
    size_t unknown = 0;
    return op_templates(crawl_ops(), unknown);
  }();
  return ops;
}

// Small tasks: a CPU estimate of 50 us keeps every tensor tiny.
SynthOptions small_options(uint64_t seed) {
  SynthOptions options;
  options.device = *device_model("cpu");
  options.target_ms = 0.05;
  options.seed = seed;
  return options;
}

std::vector<Json> make_tasks(const SynthOptions& options, size_t count) {
  Composer composer(usable_ops(), options);
  std::vector<Json> tasks;
  for (size_t i = 0; i < count; ++i) {
    auto task = composer.next();
    EXPECT_TRUE(task) << task.error();
    if (task) tasks.push_back(*task);
  }
  return tasks;
}

TEST(ComposerTest, SameSeedSameTasks) {
  auto first = make_tasks(small_options(7), 12);
  auto second = make_tasks(small_options(7), 12);
  ASSERT_EQ(first.size(), second.size());
  for (size_t i = 0; i < first.size(); ++i) EXPECT_EQ(first[i].dump(), second[i].dump());
  auto other = make_tasks(small_options(8), 12);
  EXPECT_NE(first[0]["meta"]["fingerprint"], other[0]["meta"]["fingerprint"]);
}

// A run resumed from its first five tasks (replayed, not composed) goes on with the tasks an uninterrupted run makes,
// including the later ones whose duplicate checks must remember the replayed tasks.
TEST(ComposerTest, ReplayedTasksLeaveTheRestAsTheyWere) {
  auto whole = make_tasks(small_options(7), 12);
  ASSERT_EQ(whole.size(), 12u);
  Composer resumed(usable_ops(), small_options(7));
  for (size_t i = 0; i < 5; ++i) ASSERT_TRUE(resumed.replay(whole[i]));
  for (size_t i = 5; i < whole.size(); ++i) {
    auto task = resumed.next();
    ASSERT_TRUE(task) << task.error();
    EXPECT_EQ(task->dump(), whole[i].dump()) << "task " << i;
  }
  EXPECT_EQ(resumed.stats().tasks, 12u);
  EXPECT_EQ(resumed.stats().replayed, 5u);
  Json broken = whole[0];
  broken["meta"].erase("op_count");
  EXPECT_EQ(resumed.replay(broken).error(), "meta.op_count: not 1..5");
}

TEST(ComposerTest, EveryTaskChecksAndIsNew) {
  std::set<std::string> fingerprints;
  for (const Json& task : make_tasks(small_options(1), 40)) {
    EXPECT_EQ(task["kind"], "task");
    EXPECT_EQ(task["source"], "synth");
    auto checked = check_task(task);  // binds and shape-checks again, as ca-crawl tasks does
    ASSERT_TRUE(checked) << checked.error() << "\n" << task.dump();
    EXPECT_EQ((*checked)["meta"]["fingerprint"], task["meta"]["fingerprint"]);
    EXPECT_EQ(task["program"]["nodes"].size(), task["meta"]["op_count"].get<size_t>());
    EXPECT_TRUE(fingerprints.insert(task["meta"]["fingerprint"]).second) << "repeated: " << task.dump();
    for (const auto& shape : task["meta"]["output_shapes"]) EXPECT_NE(shape["dtype"], "complex64");
  }
}

TEST(ComposerTest, FollowsTheMix) {
  SynthOptions options = small_options(3);
  options.mix = {0, 0, 0, 1, 1};
  for (const Json& task : make_tasks(options, 6)) {
    size_t nodes = task["program"]["nodes"].size();
    EXPECT_TRUE(nodes == 4 || nodes == 5) << nodes;
  }
}

TEST(ComposerTest, SizesTowardTheTarget) {
  SynthOptions options = small_options(5);
  options.target_ms = 1;
  int near = 0;
  auto tasks = make_tasks(options, 20);
  for (const Json& task : tasks) {
    double ms = task["meta"]["estimate"]["ms"];
    near += ms > 0.25 && ms < 4 ? 1 : 0;
  }
  EXPECT_GE(near, int(tasks.size()) * 3 / 4) << "most estimates land within 4x of the target";
}

}  // namespace
}  // namespace ca
