#include "model/tokenizer.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "model/pretokenize.h"
#include "model/unicode.h"
#include "util/jsonl.h"

namespace ca::model {
namespace {

std::vector<std::string> words(PreTokenizer kind, const std::string& text) {
  const std::u32string cps = utf8_decode(text);
  std::vector<std::u32string_view> parts;
  split_words(kind, cps, parts);
  std::vector<std::string> out;
  for (auto p : parts) {
    out.push_back(utf8_encode(p));
  }
  return out;
}

using Words = std::vector<std::string>;

TEST(PreTokenizeTest, Gpt2LeavesTheLastSpaceOfARunToTheNextWord) {
  EXPECT_EQ(words(PreTokenizer::gpt2, "a   b"), (Words{"a", "  ", " b"}));
  EXPECT_EQ(words(PreTokenizer::gpt2, "x  \n"), (Words{"x", "  \n"}));
  EXPECT_EQ(words(PreTokenizer::gpt2, "I'm 42!?"), (Words{"I", "'m", " 42", "!?"}));
  EXPECT_EQ(words(PreTokenizer::gpt2, "it'S"), (Words{"it", "'", "S"}));  // case-sensitive contractions
}

TEST(PreTokenizeTest, Qwen2KeepsNewlinesWithPunctuationAndSplitsDigits) {
  EXPECT_EQ(words(PreTokenizer::qwen2, "x = 123;\n\n  y"), (Words{"x", " =", " ", "1", "2", "3", ";\n\n", " ", " y"}));
  EXPECT_EQ(words(PreTokenizer::qwen2, "IT'S\tok"), (Words{"IT", "'S", "\tok"}));
  EXPECT_EQ(words(PreTokenizer::qwen2, " \n \n x"), (Words{" \n \n", " x"}));
  EXPECT_EQ(words(PreTokenizer::llama3, "12345"), (Words{"123", "45"}));
}

TEST(PreTokenizeTest, DigitsIsolatesEachDigitOrEachRun) {
  EXPECT_EQ(words(PreTokenizer::digits_individual, "ab12c"), (Words{"ab", "1", "2", "c"}));
  EXPECT_EQ(words(PreTokenizer::digits, "ab12c"), (Words{"ab", "12", "c"}));
}

TEST(PreTokenizeTest, KnowsOnlyTheSupportedPatterns) {
  EXPECT_FALSE(pre_tokenizer_for_pattern(R"(\w+|\s+)").has_value());
}

TEST(UnicodeTest, NfcComposesReordersAndKeepsExclusions) {
  EXPECT_EQ(utf8_encode(nfc(utf8_decode("e\u0301"))), "\u00e9");
  EXPECT_EQ(utf8_encode(nfc(utf8_decode("\u1100\u1161\u11a8"))), "\uac01");   // Hangul L V T
  EXPECT_EQ(utf8_encode(nfc(utf8_decode("a\u0301\u0323"))), "\u1ea1\u0301");  // below (220) before above (230)
  EXPECT_EQ(utf8_encode(nfc(utf8_decode("\u212b"))), "\u00c5");               // singleton: Angstrom sign
  EXPECT_EQ(utf8_encode(nfc(utf8_decode("\u0958"))), "\u0915\u093c");         // composition exclusion
}

TEST(UnicodeTest, InvalidUtf8BecomesReplacementCharacters) {
  EXPECT_EQ(utf8_decode("a\xff"
                        "b\xc3"),
            (std::u32string{U'a', 0xFFFD, U'b', 0xFFFD}));
  EXPECT_EQ(utf8_decode("\xc0\xaf"), (std::u32string{0xFFFD, 0xFFFD}));              // overlong
  EXPECT_EQ(utf8_decode("\xe4\xb8x"), (std::u32string{0xFFFD, U'x'}));               // a cut character: one replacement
  EXPECT_EQ(utf8_decode("\xed\xa0\x80"), (std::u32string{0xFFFD, 0xFFFD, 0xFFFD}));  // surrogate
}

nlohmann::json tiny_tokenizer() {
  // Byte-level symbols for "a", "b", "Ġ" (space) and two merges.
  return nlohmann::json::parse(R"({
    "added_tokens": [{"id": 5, "content": "<s>", "special": true, "lstrip": false, "rstrip": false,
                      "normalized": false, "single_word": false}],
    "normalizer": null,
    "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
    "decoder": {"type": "ByteLevel"},
    "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "\u0120": 2, "ab": 3, "\u0120ab": 4},
              "merges": ["a b", ["\u0120", "ab"]]}})");
}

TEST(TokenizerTest, MergesByRankAndSplitsSpecialTokens) {
  auto tok = Tokenizer::from_json(tiny_tokenizer(), "tiny");
  ASSERT_TRUE(tok) << tok.error();
  EXPECT_EQ(tok->encode("ab ab<s>a"), (std::vector<int32_t>{3, 4, 5, 0}));
  EXPECT_EQ(tok->decode(std::vector<int32_t>{3, 4, 5, 0}), "ab ab<s>a");
  EXPECT_EQ(tok->decode(std::vector<int32_t>{3, 4, 5, 0}, SkipSpecial::yes), "ab aba");
  EXPECT_TRUE(tok->is_special(5));
  EXPECT_EQ(tok->token_id("<s>"), 5);
  EXPECT_EQ(tok->token_bytes(4), " ab");
}

TEST(TokenizerTest, SpecialTokensAsTextAreTokenizedLikeText) {
  auto tok = Tokenizer::from_json(tiny_tokenizer(), "tiny");
  ASSERT_TRUE(tok) << tok.error();
  // '<' and 's' are not in this vocab: without byte fallback or unk they are dropped, as tokenizers does.
  EXPECT_EQ(tok->encode("a<s>", SpecialTokens::as_text), (std::vector<int32_t>{0}));
}

TEST(TokenizerTest, RejectsWhatItDoesNotImplement) {
  nlohmann::json j = tiny_tokenizer();
  j["pre_tokenizer"] = nlohmann::json::parse(R"({"type": "Whitespace"})");
  auto tok = Tokenizer::from_json(j, "t.json");
  ASSERT_FALSE(tok);
  EXPECT_NE(tok.error().find("pre-tokenizer 'Whitespace' is not supported"), std::string::npos) << tok.error();
  j = tiny_tokenizer();
  j["model"]["merges"] = nlohmann::json::parse(R"(["a c"])");
  tok = Tokenizer::from_json(j, "t.json");
  ASSERT_FALSE(tok);
  EXPECT_NE(tok.error().find("merges[0]"), std::string::npos) << tok.error();
  EXPECT_FALSE(Tokenizer::load("/nonexistent/tokenizer.json"));
  j = tiny_tokenizer();
  j["model"]["continuing_subword_prefix"] = "##";
  tok = Tokenizer::from_json(j, "t.json");
  ASSERT_FALSE(tok);
  EXPECT_NE(tok.error().find("subword prefixes and suffixes are not supported"), std::string::npos) << tok.error();
}

// The GGUF conversion of Qwen2 writes "" for the prefix and suffix, which is the same as none.
TEST(TokenizerTest, EmptySubwordPrefixAndSuffixAreNone) {
  nlohmann::json j = tiny_tokenizer();
  j["model"]["continuing_subword_prefix"] = "";
  j["model"]["end_of_word_suffix"] = "";
  auto tok = Tokenizer::from_json(j, "t.json");
  ASSERT_TRUE(tok) << tok.error();
  auto plain = Tokenizer::from_json(tiny_tokenizer(), "tiny");
  ASSERT_TRUE(plain);
  EXPECT_EQ(tok->encode("ab ab<s>a"), plain->encode("ab ab<s>a"));
}

// The comparison with Hugging Face `tokenizers`: tests/cli/model_tokenizer.sh writes the cases
// (tests/model/tokenizer_reference.py) and names their folder in CA_MODEL_TOKENIZER_CASES.
TEST(TokenizerReferenceTest, IdsAndTextEqualTokenizersLibrary) {
  const char* dir = std::getenv("CA_MODEL_TOKENIZER_CASES");
  if (dir == nullptr) {
    GTEST_SKIP() << "CA_MODEL_TOKENIZER_CASES not set (tests/cli/model_tokenizer.sh sets it)";
  }
  int variants = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    auto tok = Tokenizer::load(entry.path() / "tokenizer.json");
    ASSERT_TRUE(tok) << tok.error();
    std::ifstream in(entry.path() / "cases.jsonl");
    std::string line;
    int cases = 0, failed = 0;
    while (std::getline(in, line)) {
      const Json c = Json::parse(line);
      ++cases;
      if (c.contains("decode_ids")) {
        const auto ids = c["decode_ids"].get<std::vector<int32_t>>();
        failed += tok->decode(ids) != c["decoded"].get<std::string>();
        EXPECT_EQ(tok->decode(ids), c["decoded"].get<std::string>()) << entry.path() << " decode " << c["decode_ids"];
        continue;
      }
      const std::string text = c["text"];
      const auto ids = tok->encode(text);
      const bool ok =
          ids == c["ids"].get<std::vector<int32_t>>() &&
          tok->encode(text, SpecialTokens::as_text) == c["ids_special_as_text"].get<std::vector<int32_t>>() &&
          tok->decode(ids) == c["decoded"].get<std::string>() &&
          tok->decode(ids, SkipSpecial::yes) == c["decoded_skip_special"].get<std::string>();
      failed += !ok;
      EXPECT_TRUE(ok) << entry.path().filename() << ": " << Json(text).dump().substr(0, 200) << "\n  got  "
                      << Json(ids).dump().substr(0, 300) << "\n  want " << c["ids"].dump().substr(0, 300);
      if (failed > 5) {
        FAIL() << "stopping after 5 failures";
      }
    }
    std::printf("%s: %d cases, %d differ\n", entry.path().filename().c_str(), cases, failed);
    EXPECT_GT(cases, 100);
    ++variants;
  }
  EXPECT_EQ(variants, 4);
}

}  // namespace
}  // namespace ca::model
