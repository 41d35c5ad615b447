#include "synth/records_in.h"

#include <fstream>

#include <gtest/gtest.h>

namespace ca {
namespace {

std::string write_temp(const std::string& name, const std::string& text) {
  std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

// One record a line.
std::string lines(const std::vector<std::string>& records) {
  std::string text;
  for (const auto& record : records) text.append(record).append("\n");
  return text;
}

const std::string k_relu =
    R"({"kind":"op","name":"aten::relu","overload":"","schema":"aten::relu(Tensor self) -> Tensor","category":"activation","usable":true})";

TEST(ReadInputRecordsTest, ReadsOpRecords) {
  auto records = read_input_records(write_temp("ca_synth_ops.jsonl", lines({k_relu, "", k_relu})), "op");
  ASSERT_TRUE(records) << records.error().message;
  EXPECT_EQ(records->size(), 2u);
}

TEST(ReadInputRecordsTest, NamesFileLineAndField) {
  std::string path = write_temp(
      "ca_synth_bad.jsonl",
      lines({k_relu, R"({"kind":"op","name":"aten::gelu","overload":"","category":"activation","usable":"yes"})"}));
  auto records = read_input_records(path, "op");
  ASSERT_FALSE(records);
  EXPECT_EQ(records.error().code, ExitCode::data_error);
  EXPECT_EQ(records.error().message, path + ":2: usable: expected a boolean, got string");
  auto modules = read_input_records(write_temp("ca_synth_kind.jsonl", lines({k_relu})), "module");
  EXPECT_EQ(modules.error().message,
            ::testing::TempDir() + "ca_synth_kind.jsonl:1: kind: expected \"module\", got \"op\"");
}

TEST(ReadInputRecordsTest, MissingFileIsNoInput) {
  auto records = read_input_records(::testing::TempDir() + "ca_synth_no_such.jsonl", "op");
  ASSERT_FALSE(records);
  EXPECT_EQ(records.error().code, ExitCode::no_input);
}

}  // namespace
}  // namespace ca
