// Tests of trajectory tokenization: the mask covers exactly what the model wrote, the reward's place, the errors.
#include "train/sequence.h"

#include <gtest/gtest.h>

namespace ca::train {
namespace {

// A byte-level BPE tokenizer of every byte (GPT-2's byte map, no merges) plus ChatML's two special tokens.
model::Tokenizer byte_tokenizer() {
  nlohmann::json vocab = nlohmann::json::object();
  int next_extra = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    const char32_t cp = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(next_extra++);
    std::string utf8;
    if (cp < 0x80) {
      utf8 = std::string(1, static_cast<char>(cp));
    } else {
      utf8 = {static_cast<char>(0xC0 | (cp >> 6)), static_cast<char>(0x80 | (cp & 0x3F))};
    }
    vocab[utf8] = b;
  }
  nlohmann::json j = {{"added_tokens",
                       {{{"id", 256},
                         {"content", "<|im_start|>"},
                         {"special", true},
                         {"lstrip", false},
                         {"rstrip", false},
                         {"normalized", false},
                         {"single_word", false}},
                        {{"id", 257},
                         {"content", "<|im_end|>"},
                         {"special", true},
                         {"lstrip", false},
                         {"rstrip", false},
                         {"normalized", false},
                         {"single_word", false}}}},
                      {"normalizer", nullptr},
                      {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}},
                      {"decoder", {{"type", "ByteLevel"}}},
                      {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", nlohmann::json::array()}}}};
  auto tok = model::Tokenizer::from_json(j, "bytes");
  EXPECT_TRUE(tok) << tok.error();
  return std::move(*tok);
}

Json trajectory() {
  return Json::parse(R"({"id": "t#0", "reward": {"value": 0.5},
    "tools": [{"type": "function", "function": {"name": "verify", "parameters": {}}}],
    "messages": [
      {"role": "system", "content": "sys"},
      {"role": "user", "content": "write"},
      {"role": "assistant", "content": "ok", "tool_calls": [{"id": "c", "type": "function",
                                                              "function": {"name": "verify", "arguments": "{}"}}]},
      {"role": "tool", "tool_call_id": "c", "name": "verify", "content": "PASS"},
      {"role": "assistant", "content": "done"}]})");
}

TEST(SequenceTest, MaskCoversExactlyTheAssistantTextAndItsEndToken) {
  const model::Tokenizer tok = byte_tokenizer();
  auto seq = tokenize_trajectory(trajectory(), tok, 4096);
  ASSERT_TRUE(seq) << seq.error();
  ASSERT_EQ(seq->ids.size(), seq->mask.size());
  std::string action;
  for (size_t i = 0; i < seq->ids.size(); ++i) {
    if (seq->mask[i]) {
      action += tok.decode(std::vector<int32_t>{static_cast<int32_t>(seq->ids[i])});
    }
  }
  EXPECT_EQ(action, "ok\n<tool_call>\n{\"name\": \"verify\", \"arguments\": {}}\n</tool_call><|im_end|>done<|im_end|>");
  EXPECT_EQ(seq->reward, 0.5);
  EXPECT_EQ(seq->id, "t#0");
  // The last action token is the final <|im_end|>; only the template's newline follows it.
  EXPECT_EQ(seq->ids[seq->ids.size() - 2], 257);
  EXPECT_EQ(seq->mask[seq->mask.size() - 2], 1);
  EXPECT_EQ(seq->mask.back(), 0);
}

TEST(SequenceTest, ToolResultsAndToolSchemasAreNotActions) {
  auto segments = chatml_segments(trajectory());
  ASSERT_TRUE(segments) << segments.error();
  for (const Segment& s : *segments) {
    if (s.action) {
      EXPECT_EQ(s.text.find("PASS"), std::string::npos);
      EXPECT_EQ(s.text.find("<tools>"), std::string::npos);
    }
  }
  EXPECT_NE((*segments)[0].text.find("<tools>"), std::string::npos);
  EXPECT_NE((*segments)[2].text.find("<tool_response>\nPASS\n</tool_response>"), std::string::npos);
}

TEST(SequenceTest, OverTheMaximumContextIsAnErrorNotATruncation) {
  const model::Tokenizer tok = byte_tokenizer();
  auto seq = tokenize_trajectory(trajectory(), tok, 20);
  ASSERT_FALSE(seq);
  EXPECT_NE(seq.error().find("over the maximum context of 20"), std::string::npos) << seq.error();
}

TEST(SequenceTest, RejectsRecordsWithoutRewardOrAssistantOrWithUnknownRoles) {
  const model::Tokenizer tok = byte_tokenizer();
  Json t = trajectory();
  t.erase("reward");
  EXPECT_EQ(tokenize_trajectory(t, tok, 4096).error(), "no reward.value");
  t = trajectory();
  t["messages"] = Json::parse(R"([{"role": "user", "content": "x"}])");
  EXPECT_EQ(tokenize_trajectory(t, tok, 4096).error(), "no assistant tokens");
  t = trajectory();
  t["messages"][1]["role"] = "narrator";
  EXPECT_NE(tokenize_trajectory(t, tok, 4096).error().find("messages[1]: unknown role 'narrator'"), std::string::npos);
}

TEST(SequenceTest, TurnByTurnTokensMustEqualWholeConversationTokens) {
  // A tokenizer whose merge spans a segment boundary gives other ids turn by turn than for the whole text.
  nlohmann::json j = {
      {"added_tokens", nlohmann::json::array()},
      {"normalizer", nullptr},
      {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}},
      {"decoder", {{"type", "ByteLevel"}}},
      {"model", {{"type", "BPE"}, {"vocab", nlohmann::json::object()}, {"merges", nlohmann::json::array()}}}};
  // Every byte of the ChatML text, and a merge of ">" + "\n" (>Ċ) that spans the end of an action segment
  // ("<|im_end|>") and the start of the prompt after it ("\n").
  const std::string text = "<|im_start|>\nsystemuwrteaoknd_clvf{}\":,sPAS/ -";
  int id = 0;
  for (unsigned char c : text) {
    std::string key = c == '\n' ? "\u010a" : (c == ' ' ? "\u0120" : std::string(1, static_cast<char>(c)));
    if (!j["model"]["vocab"].contains(key)) {
      j["model"]["vocab"][key] = id++;
    }
  }
  j["model"]["vocab"][">\u010a"] = id++;
  j["model"]["merges"].push_back("> \u010a");
  auto tok = model::Tokenizer::from_json(j, "merging");
  ASSERT_TRUE(tok) << tok.error();
  Json t = trajectory();
  t.erase("tools");
  auto seq = tokenize_trajectory(t, *tok, 4096);
  ASSERT_FALSE(seq);
  EXPECT_NE(seq.error().find("turn-by-turn tokens differ from the whole conversation's at token"), std::string::npos)
      << seq.error();
}

}  // namespace
}  // namespace ca::train
