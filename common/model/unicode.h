// The Unicode the tokenizer needs: UTF-8 to code points and back, the character classes of the pre-tokenizers'
// regular expressions (\p{L}, \p{N}, \s) and NFC normalization, from tables generated out of unicodedata.
#pragma once

#include <string>
#include <string_view>

namespace ca::model {

/// Code points of UTF-8 `text`; an invalid byte becomes U+FFFD, as Rust's from_utf8_lossy does.
std::u32string utf8_decode(std::string_view text);
/// UTF-8 of code points.
std::string utf8_encode(std::u32string_view text);
/// Appends the UTF-8 of `cp` to `out`.
void utf8_append(std::string& out, char32_t cp);

bool is_letter(char32_t cp);      // general category L*
bool is_number(char32_t cp);      // general category N*
bool is_whitespace(char32_t cp);  // the White_Space property (Oniguruma's \s)

/// The canonical combining class of `cp` (0 for starters).
int combining_class(char32_t cp);

/// `text` in Normalization Form C.
std::u32string nfc(std::u32string_view text);

}  // namespace ca::model
