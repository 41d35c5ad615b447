// The pre-tokenizers' splitting of text into words, written out by hand for the regular expressions the Llama,
// SmolLM2 and Qwen2 tokenizers use (what `tokenizers` runs through Oniguruma), with the same matches.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

namespace ca::model {

enum class PreTokenizer {
  gpt2,               // ByteLevel's: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
  qwen2,              // Qwen2's Split: case-insensitive contractions, [^\r\n\p{L}\p{N}]?\p{L}+, \p{N}, ...
  llama3,             // as qwen2 with \p{N}{1,3}
  digits,             // Digits: runs of \p{N} apart
  digits_individual,  // Digits(individual_digits): every \p{N} apart
};

/// Which pre-tokenizer a Split's regex is, if it is one of those above.
std::optional<PreTokenizer> pre_tokenizer_for_pattern(std::string_view regex);

/// Appends the words of `text` (every code point lands in exactly one word, in order) to `out`.
void split_words(PreTokenizer kind, std::u32string_view text, std::vector<std::u32string_view>& out);

}  // namespace ca::model
