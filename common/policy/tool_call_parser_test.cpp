#include "policy/tool_call_parser.h"

#include <gtest/gtest.h>

namespace ca {
namespace {

TEST(ToolCallParserTest, ReadsHermesTags) {
  auto calls = parse_text_tool_calls(
      "Let me look.\n<tool_call>\n{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}\n</tool_call>\n"
      "<tool_call>{\"name\": \"verify\", \"arguments\": {}}</tool_call>");
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].name, "bash");
  EXPECT_EQ(Json::parse(calls[0].arguments)["command"], "ls");
  EXPECT_EQ(calls[1].name, "verify");
  EXPECT_EQ(calls[0].id, "text_call_0");
  EXPECT_EQ(calls[1].id, "text_call_1");
}

TEST(ToolCallParserTest, ReadsAnUnclosedHermesTagAtTheEnd) {
  auto calls = parse_text_tool_calls("<tool_call>{\"name\": \"finish\", \"arguments\": {}}");
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].name, "finish");
}

TEST(ToolCallParserTest, ReadsFencedJsonBlocks) {
  auto calls = parse_text_tool_calls(
      "Now:\n```json\n{\"name\": \"glob\", \"parameters\": {\"pattern\": \"*.cu\"}}\n```\nthen\n```\n"
      "{\"function\": {\"name\": \"profile\", \"arguments\": \"{}\"}}\n```");
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].name, "glob");
  EXPECT_EQ(Json::parse(calls[0].arguments)["pattern"], "*.cu");
  EXPECT_EQ(calls[1].name, "profile");
  EXPECT_EQ(calls[1].arguments, "{}");
}

TEST(ToolCallParserTest, ReadsBareObjectsWithBracesInStrings) {
  auto calls =
      parse_text_tool_calls("Sure. {\"name\": \"bash\", \"arguments\": {\"command\": \"echo '}{'\"}} and done");
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(Json::parse(calls[0].arguments)["command"], "echo '}{'");
}

TEST(ToolCallParserTest, FindsNoCallInProseOrMalformedJson) {
  for (const char* text :
       {"", "I am done.", "{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"",
        "<tool_call>{not json</tool_call>", "```json\n[1, 2\n```", "{\"arguments\": {}}", "{\"name\": 3}", "}}}{{{",
        "\xff\xfe{\"name\"", "```json\n{\"name\": \"x\"", "<tool_call>"}) {
    EXPECT_TRUE(parse_text_tool_calls(text).empty()) << text;
  }
}

TEST(ToolCallParserTest, MissingArgumentsAreAnEmptyObject) {
  auto calls = parse_text_tool_calls("{\"name\": \"verify\"}");
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].arguments, "{}");
}

TEST(ToolCallParserTest, NeverThrowsOnDeepNesting) {
  std::string deep(100000, '[');
  EXPECT_NO_THROW(parse_text_tool_calls("```json\n" + deep + "\n```"));
  EXPECT_NO_THROW(parse_text_tool_calls(std::string(100000, '{')));
}

}  // namespace
}  // namespace ca
