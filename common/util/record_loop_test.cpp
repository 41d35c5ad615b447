#include "util/record_loop.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "util/atomic_file.h"

namespace ca {
namespace {

struct LoopFixture : ::testing::Test {
  std::filesystem::path dir = std::filesystem::temp_directory_path() / ("ca_loop_test_" + std::to_string(getpid()));
  std::string input = (dir / "in.jsonl").string();
  std::string output = (dir / "out.jsonl").string();
  void SetUp() override {
    std::filesystem::create_directories(dir);
    std::ofstream(input) << "{\"n\":1}\n{\"n\":-1}\nnot json\n{\"n\":2}\n";
  }
  void TearDown() override { std::filesystem::remove_all(dir); }
  // Doubles n; rejects negative n.
  static std::expected<Json, std::string> doubled(const Json& record) {
    if (record["n"].get<int>() < 0) return std::unexpected("n: negative");
    Json out = record;
    out["n"] = record["n"].get<int>() * 2;
    return out;
  }
  ExitCode run(OnBadRecord on_bad) {
    auto writer = JsonlWriter::open(output);
    EXPECT_TRUE(writer);
    ExitCode code = transform_records({input}, *writer, on_bad, doubled);
    EXPECT_TRUE(writer->commit());
    return code;
  }
};

TEST_F(LoopFixture, BadRecordsAreSkippedAndCounted) {
  EXPECT_EQ(run(OnBadRecord::skip), ExitCode::some_failed);
  EXPECT_EQ(*read_file(output), "{\"n\":2}\n{\"n\":4}\n");
}

TEST_F(LoopFixture, FailFastStopsAtFirstBadRecord) {
  EXPECT_EQ(run(OnBadRecord::stop), ExitCode::data_error);
  EXPECT_EQ(*read_file(output), "{\"n\":2}\n");
}

TEST_F(LoopFixture, MissingInputIsNoInput) {
  auto writer = JsonlWriter::open(output);
  ASSERT_TRUE(writer);
  EXPECT_EQ(transform_records({(dir / "missing.jsonl").string()}, *writer, OnBadRecord::skip, doubled), ExitCode::no_input);
}

}  // namespace
}  // namespace ca
