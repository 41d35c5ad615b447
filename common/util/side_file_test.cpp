#include "util/side_file.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace ca {
namespace {

namespace fs = std::filesystem;

struct SideFileFixture : ::testing::Test {
  fs::path dir = fs::temp_directory_path() / ("ca_side_file_test_" + std::to_string(getpid()));
  std::string path = (dir / "tasks.jsonl").string();
  void SetUp() override { fs::create_directories(dir); }
  void TearDown() override { fs::remove_all(dir); }
  void write(const std::string& text) { std::ofstream(path) << text; }
};

SideRecordCheck needs_id = [](const Json& record) -> std::expected<void, std::string> {
  if (!record.contains("id")) return std::unexpected("id: missing");
  return {};
};

TEST_F(SideFileFixture, ReadsEveryRecordInOrderWithWhere) {
  write("{\"id\":\"a\"}\n\n{\"id\":\"b\"}\n");
  auto records = read_side_file(path, needs_id);
  ASSERT_TRUE(records) << records.error().message;
  ASSERT_EQ(records->size(), 2u);
  EXPECT_EQ((*records)[0].value["id"], "a");
  EXPECT_EQ((*records)[1].where(), path + ":3");
}

TEST_F(SideFileFixture, OnePolicyForEveryFailure) {
  auto missing = read_side_file((dir / "missing.jsonl").string());
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ExitCode::no_input);

  write("{\"id\":\"a\"}\nnot json\n");
  auto bad_json = read_side_file(path, needs_id);
  ASSERT_FALSE(bad_json);
  EXPECT_EQ(bad_json.error().code, ExitCode::data_error);
  EXPECT_EQ(bad_json.error().message.rfind(path + ":2: ", 0), 0u) << bad_json.error().message;

  write("{\"id\":\"a\"}\n{\"name\":\"b\"}\n");
  auto refused = read_side_file(path, needs_id);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ExitCode::data_error);
  EXPECT_EQ(refused.error().message, path + ":2: id: missing");
  EXPECT_TRUE(read_side_file(path)) << "without a check every JSON record is accepted";
}

TEST_F(SideFileFixture, ReportingReturnsTheCode) {
  testing::internal::CaptureStderr();
  EXPECT_EQ(report_side_file_error({ExitCode::data_error, "tasks.jsonl:2: id: missing"}), ExitCode::data_error);
  EXPECT_NE(testing::internal::GetCapturedStderr().find("error: tasks.jsonl:2: id: missing\n"), std::string::npos);
}

}  // namespace
}  // namespace ca
