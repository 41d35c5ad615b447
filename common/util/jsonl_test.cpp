#include "util/jsonl.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "util/atomic_file.h"
#include "util/json_field.h"

namespace ca {
namespace {

std::string temp_path(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("ca_jsonl_test_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

std::string write_text(const std::string& name, const std::string& text) {
  std::string path = temp_path(name);
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST(JsonlReaderTest, ReadsRecordsAndSkipsBlankLines) {
  auto reader = JsonlReader::open(write_text("a.jsonl", "{\"kind\":\"op\"}\n\n{\"kind\":\"task\"}"));
  ASSERT_TRUE(reader);
  Record record;
  std::string message;
  ASSERT_EQ(reader->next(record, message), JsonlReader::Status::record);
  EXPECT_EQ(record.value["kind"], "op");
  EXPECT_EQ(record.line, 1u);
  ASSERT_EQ(reader->next(record, message), JsonlReader::Status::record);
  EXPECT_EQ(record.value["kind"], "task");
  EXPECT_EQ(record.line, 3u);
  EXPECT_EQ(reader->next(record, message), JsonlReader::Status::end);
}

TEST(JsonlReaderTest, ReportsLineAndColumnOfBadRecordAndGoesOn) {
  auto reader = JsonlReader::open(write_text("b.jsonl", "{\"a\":1}\n{\"a\":1,}\n[1]\n{\"b\":2}\n"));
  ASSERT_TRUE(reader);
  Record record;
  std::string message;
  ASSERT_EQ(reader->next(record, message), JsonlReader::Status::record);
  ASSERT_EQ(reader->next(record, message), JsonlReader::Status::bad_record);
  EXPECT_NE(message.find("invalid JSON: column 8"), std::string::npos) << message;
  EXPECT_EQ(record.where(), reader->name() + ":2");
  ASSERT_EQ(reader->next(record, message), JsonlReader::Status::bad_record);
  EXPECT_EQ(message, "expected a JSON object, got array");
  ASSERT_EQ(reader->next(record, message), JsonlReader::Status::record);
  EXPECT_EQ(record.value["b"], 2);
}

TEST(JsonlReaderTest, ANestingDeeperThanTheLimitIsABadRecordNotACrash) {
  std::string deep = "{\"a\":" + std::string(200000, '[') + std::string(200000, ']') + "}";
  std::string brackets_in_a_string = "{\"a\":\"" + std::string(600, '[') + "\\\"\"}";
  auto reader = JsonlReader::open(write_text("deep.jsonl", deep + "\n" + brackets_in_a_string + "\n{\"b\":2}\n"));
  ASSERT_TRUE(reader);
  Record record;
  std::string message;
  ASSERT_EQ(reader->next(record, message), JsonlReader::Status::bad_record);
  EXPECT_EQ(message, "JSON nested deeper than 512 levels");
  ASSERT_EQ(reader->next(record, message), JsonlReader::Status::record) << message;
  EXPECT_EQ(record.value["a"].get<std::string>().size(), 601u);
  ASSERT_EQ(reader->next(record, message), JsonlReader::Status::record);
}

TEST(ParseJsonTest, AcceptsTheLimitAndRefusesOneMore) {
  auto at_limit = parse_json(std::string(k_max_json_depth, '[') + std::string(k_max_json_depth, ']'));
  EXPECT_TRUE(at_limit) << at_limit.error();
  auto over = parse_json(std::string(k_max_json_depth + 1, '[') + std::string(k_max_json_depth + 1, ']'));
  ASSERT_FALSE(over);
  auto bad = parse_json("{\"a\":1,}");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().rfind("invalid JSON: column 8", 0), 0u) << bad.error();
}

TEST(JsonlReaderTest, MissingFileIsAnErrorNamingIt) {
  auto reader = JsonlReader::open("/nonexistent/x.jsonl");
  ASSERT_FALSE(reader);
  EXPECT_NE(reader.error().find("/nonexistent/x.jsonl"), std::string::npos);
}

TEST(JsonlWriterTest, KeepsUnknownFieldsAndTheirOrder) {
  std::string path = temp_path("out.jsonl");
  auto writer = JsonlWriter::open(path);
  ASSERT_TRUE(writer);
  Json record = Json::parse(R"({"zeta":1,"kind":"task","alpha":{"x":[1,2.5]}})");
  EXPECT_EQ(writer->write(record), JsonlWriter::Status::ok);
  EXPECT_FALSE(std::filesystem::exists(path)) << "visible before commit";
  ASSERT_TRUE(writer->commit());
  EXPECT_EQ(*read_file(path), "{\"zeta\":1,\"kind\":\"task\",\"alpha\":{\"x\":[1,2.5]}}\n");
}

TEST(JsonlWriterTest, UncommittedOutputLeavesNoFile) {
  std::string path = temp_path("never.jsonl");
  {
    auto writer = JsonlWriter::open(path);
    ASSERT_TRUE(writer);
    writer->write(Json::object({{"kind", "x"}}));
  }
  EXPECT_FALSE(std::filesystem::exists(path));
  for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(path).parent_path())) {
    EXPECT_EQ(entry.path().string().find("never.jsonl.tmp"), std::string::npos) << entry.path();
  }
}

TEST(JsonFieldTest, ErrorsNameThePath) {
  Json object = Json::parse(R"({"op": 3, "shape": [1, "x"]})");
  EXPECT_EQ(require_field(object, "name", "program.nodes[2]").error(), "program.nodes[2].name: missing field");
  EXPECT_EQ(as_string(object["op"], "program.nodes[2].op").error(),
            "program.nodes[2].op: expected a string, got number");
  EXPECT_EQ(as_int_list(object["shape"], "s").error(), "s[1]: expected an integer, got string");
}

}  // namespace ca
