// The std::format stand-in.
#include "util/text_format.h"

#include <gtest/gtest.h>

namespace ca {
namespace {

TEST(TextFormatTest, PrintsEachTypeWithAndWithoutSpec) {
  EXPECT_EQ(format_text("a {} b {} c {}", std::string("x"), 42, 1.05), "a x b 42 c 1.05");
  EXPECT_EQ(format_text("{:.1f}% {:.3f}x {:+.1f} {:.2g}", 12.345, 2.0, -0.04, 0.1767), "12.3% 2.000x -0.0 0.18");
  EXPECT_EQ(format_text("{}", 0.0), "0");
}

TEST(TextFormatTest, LeavesPlaceholdersWithoutArgumentsEmpty) {
  EXPECT_EQ(format_text("[{}][{}]", 1), "[1][]");
  EXPECT_EQ(format_text("no braces"), "no braces");
  EXPECT_EQ(format_text("open { only", 1), "open { only");
}

}  // namespace
}  // namespace ca
