#include "profile/profile.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace ca {
namespace {

TEST(MedianCiTest, OrderStatisticsAroundTheMedian) {
  // 1..100: the median is 50.5; 0.98 sqrt(100) = 9.8, so the order statistics at indices floor(40.2) = 40 and
  // ceil(59.8) = 60, the values 41 and 61.
  std::vector<double> times;
  for (int i = 100; i >= 1; --i) times.push_back(i);  // unsorted on purpose
  EXPECT_NEAR(median_ci(times), (61.0 - 41.0) / (2 * 50.5), 1e-12);
  // Equal times: the median is exact.
  EXPECT_EQ(median_ci(std::vector<double>(50, 40.0)), 0.0);
  // The interval narrows as calls are added (four times the calls, about half the width).
  std::vector<double> more;
  for (int i = 1; i <= 400; ++i) more.push_back(1 + i / 4.0);
  std::vector<double> fewer;
  for (int i = 1; i <= 100; ++i) fewer.push_back(1 + i);
  EXPECT_LT(median_ci(more), median_ci(fewer));
}

TEST(MedianCiTest, TooFewTimesAreUnknown) {
  EXPECT_TRUE(std::isinf(median_ci({})));
  EXPECT_TRUE(std::isinf(median_ci({1, 2, 3, 4, 5})));
  EXPECT_FALSE(std::isinf(median_ci({1, 2, 3, 4, 5, 6})));
}

}  // namespace
}  // namespace ca
