#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "timing/clock.h"
#include "timing/lease.h"
#include "timing/speed_of_light.h"
#include "util/remove_tree.h"

namespace ca {
namespace {

TEST(ClockTest, CpuClockTimesTheRegionAndFlushesTwiceACache) {
  auto clock = make_cpu_clock();
  EXPECT_GE(clock->flush_bytes(), size_t(2) << 20);
  EXPECT_LE(clock->flush_bytes(), size_t(1) << 30) << "a flush of cpu0's cache, not the machine's sum of slices";
  clock->prepare();
  clock->start();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ClockSample sample = clock->stop();
  EXPECT_GE(sample.host_us, 20000.0);
  EXPECT_EQ(sample.device_us, sample.host_us);
}

TEST(ClockTest, TheHostClockCountsWhereWorkEscapedTheDeviceClock) {
  EXPECT_EQ(counted_us({1000, 1100}), 1000);  // launch overhead: the device clock
  EXPECT_EQ(counted_us({100, 500}), 500);     // a side stream: the host clock
  EXPECT_EQ(counted_us({10, 25}), 10);        // within the 20 us allowance
  EXPECT_EQ(counted_us({-1, 300}), 300);      // no device time at all
}

TEST(SpeedOfLightTest, FloorIsBytesOverBandwidth) {
  auto cpu = peak_bandwidth(Backend::cpu, 0);
  ASSERT_TRUE(cpu);
  EXPECT_EQ(*cpu, 1e12);
  EXPECT_DOUBLE_EQ(floor_us(size_t(4) << 30, 4e12), double(size_t(4) << 30) / 4e12 * 1e6);
  EXPECT_TRUE(device_description(Backend::cpu, 0).starts_with("cpu"));
}

TEST(LeaseTest, ASecondHolderWaitsUntilTheFirstLetsGo) {
  std::string dir = "/tmp/ca-lease-XXXXXX";
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  auto first = DeviceLease::acquire("cpu", dir);
  ASSERT_TRUE(first) << first.error();
  EXPECT_FALSE(first->waited());
  // flock belongs to an open file description, so a second acquire in this process contends like another job.
  std::atomic<bool> acquired = false, waited = false;
  std::thread second([&] {
    auto lease = DeviceLease::acquire("cpu", dir);
    waited = lease && lease->waited();
    acquired = lease.has_value();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(acquired) << "the second holder did not wait";
  { DeviceLease released = std::move(*first); }
  second.join();
  EXPECT_TRUE(acquired);
  EXPECT_TRUE(waited);
  EXPECT_TRUE(remove_tree(dir));
  EXPECT_FALSE(DeviceLease::acquire("cpu", dir + "/missing")) << "a lock that cannot be made is an error";
}

TEST(RemoveTreeTest, RemovesNestedFilesAndLinksWithoutFollowingThem) {
  std::string dir = "/tmp/ca-tree-XXXXXX", outside = "/tmp/ca-outside-XXXXXX";
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  ASSERT_NE(mkdtemp(outside.data()), nullptr);
  ASSERT_EQ(mkdir((dir + "/a").c_str(), 0700), 0);
  ASSERT_EQ(mkdir((dir + "/a/b").c_str(), 0700), 0);
  FILE* f = fopen((dir + "/a/b/file").c_str(), "w");
  ASSERT_NE(f, nullptr);
  fclose(f);
  f = fopen((outside + "/keep").c_str(), "w");
  ASSERT_NE(f, nullptr);
  fclose(f);
  ASSERT_EQ(symlink(outside.c_str(), (dir + "/a/link").c_str()), 0);
  EXPECT_TRUE(remove_tree(dir));
  EXPECT_NE(access(dir.c_str(), F_OK), 0);
  EXPECT_EQ(access((outside + "/keep").c_str(), F_OK), 0) << "the link's target must survive";
  EXPECT_TRUE(remove_tree(dir)) << "a missing path is not an error";
  EXPECT_TRUE(remove_tree(outside));
}

}  // namespace
}  // namespace ca
