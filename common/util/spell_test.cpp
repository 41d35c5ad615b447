#include "util/spell.h"

#include <gtest/gtest.h>

namespace ca {

TEST(SpellTest, SuggestsNearestName) {
  std::vector<std::string> modes = {"ops", "modules", "kernelbench"};
  EXPECT_EQ(nearest("modles", modes), "modules");
  EXPECT_EQ(did_you_mean("opz", modes), ", did you mean 'ops'?");
}

TEST(SpellTest, SuggestsNothingForUnrelatedWord) {
  EXPECT_EQ(nearest("xylophone", {"ops", "modules"}), "");
  EXPECT_EQ(did_you_mean("xylophone", {"ops"}), "");
}

TEST(SpellTest, QuotesLists) {
  EXPECT_EQ(quoted_list({"a", "b"}), "'a', 'b'");
}

}  // namespace ca
