// A Hugging Face tokenizer read from tokenizer.json: byte-level BPE (GPT-2's byte map, ranked merges), the
// pre-tokenizers of the Llama/SmolLM2 and Qwen2 families (ByteLevel's GPT-2 split, Digits, the Qwen2 Split
// pattern), the NFC normalizer, and added tokens (special or not). Ids equal those of the `tokenizers` library.
#pragma once

#include <cstdint>
#include <expected>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace ca::model {

enum class SpecialTokens { parse, as_text };  // whether added tokens in the text become their ids
enum class SkipSpecial { no, yes };

class Tokenizer {
 public:
  /// Reads tokenizer.json. Errors name the file and the part not supported (a model type other than BPE, an
  /// unknown pre-tokenizer or normalizer, a Split pattern that is neither GPT-2's nor Qwen2's).
  static std::expected<Tokenizer, std::string> load(const std::filesystem::path& path);
  /// The same from parsed JSON (unordered: a vocabulary of 150k keys parses slowly into ordered JSON); `where`
  /// prefixes errors.
  static std::expected<Tokenizer, std::string> from_json(const nlohmann::json& json, const std::string& where);

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  /// The ids of `text` (no BOS/EOS is added: the chat template writes those it wants).
  std::vector<int32_t> encode(std::string_view text, SpecialTokens special = SpecialTokens::parse) const;
  /// The text of `ids`; bytes that do not form valid UTF-8 become U+FFFD, as in `tokenizers`.
  std::string decode(std::span<const int32_t> ids, SkipSpecial skip = SkipSpecial::no) const;
  /// The raw bytes of one token (a piece of a UTF-8 character possibly): what streaming decoders concatenate.
  std::string token_bytes(int32_t id) const;

  /// The id of a vocabulary or added token, if it has one.
  std::optional<int32_t> token_id(std::string_view token) const;
  /// Whether `id` is an added token marked special.
  bool is_special(int32_t id) const;
  /// One past the largest id.
  int32_t vocab_size() const;

 private:
  struct Impl;
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> m_impl;
};

}  // namespace ca::model
