#include "util/atomic_file.h"

#include <unistd.h>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace ca {
namespace {

namespace fs = std::filesystem;

struct SameOutputFixture : ::testing::Test {
  fs::path dir = fs::temp_directory_path() / ("ca_atomic_file_test_" + std::to_string(getpid()));
  void SetUp() override { fs::create_directories(dir / "real"); }
  void TearDown() override { fs::remove_all(dir); }
  std::string at(const std::string& name) const { return (dir / name).string(); }
};

TEST_F(SameOutputFixture, OnePathHoweverSpelledIsOneFile) {
  EXPECT_TRUE(same_output_file(at("real/out.jsonl"), at("real/out.jsonl")));
  EXPECT_TRUE(same_output_file(at("real/out.jsonl"), at("real/./out.jsonl")));
  EXPECT_TRUE(same_output_file(at("real/out.jsonl"), at("real/../real/out.jsonl")));
  // Neither exists yet: the folder decides.
  fs::create_directory_symlink(dir / "real", dir / "link");
  EXPECT_TRUE(same_output_file(at("real/out.jsonl"), at("link/out.jsonl")));
  EXPECT_FALSE(same_output_file(at("real/out.jsonl"), at("real/rejects.jsonl")));
}

TEST_F(SameOutputFixture, RelativeAndAbsoluteNamesOfOneFileAgree) {
  fs::path before = fs::current_path();
  fs::current_path(dir / "real");
  EXPECT_TRUE(same_output_file("out.jsonl", "./out.jsonl"));
  EXPECT_TRUE(same_output_file("out.jsonl", at("real/out.jsonl")));
  EXPECT_FALSE(same_output_file("out.jsonl", "rejects.jsonl"));
  fs::current_path(before);
}

TEST_F(SameOutputFixture, TwoNamesOfAnExistingFileAreOneFile) {
  std::ofstream(at("real/out.jsonl")) << "{}\n";
  fs::create_symlink(dir / "real/out.jsonl", dir / "alias.jsonl");
  fs::create_hard_link(dir / "real/out.jsonl", dir / "hard.jsonl");
  EXPECT_TRUE(same_output_file(at("real/out.jsonl"), at("alias.jsonl")));
  EXPECT_TRUE(same_output_file(at("hard.jsonl"), at("real/out.jsonl")));
}

TEST_F(SameOutputFixture, StdoutAndDevicesAreWrittenInPlace) {
  EXPECT_TRUE(same_output_file("-", "-"));
  EXPECT_FALSE(same_output_file("-", at("real/out.jsonl")));
  EXPECT_FALSE(same_output_file("/dev/null", "/dev/null"));
}

}  // namespace
}  // namespace ca
