#include "util/executable_dir.h"

#include <unistd.h>

#include <gtest/gtest.h>

namespace ca {
namespace {

// The test binary's own folder: where its file is, as the kernel names it.
TEST(ExecutableDirTest, IsTheFolderHoldingThisProgram) {
  std::string dir = executable_dir();
  ASSERT_FALSE(dir.empty());
  EXPECT_EQ(dir.front(), '/');
  char self[4096];
  ssize_t size = ::readlink("/proc/self/exe", self, sizeof self - 1);
  ASSERT_GT(size, 0);
  EXPECT_EQ(std::string(self, size_t(size)).rfind(dir + "/", 0), 0u);
  EXPECT_EQ(::access((dir + "/ca_core_tests").c_str(), X_OK), 0) << dir;
}

}  // namespace
}  // namespace ca
