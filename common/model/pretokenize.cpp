// Each pattern is an alternation tried left to right at the current position; the first alternative that
// matches wins, with the greedy quantifiers' backtracking worked out per alternative below.
#include "model/pretokenize.h"

#include "model/unicode.h"

namespace ca::model {
namespace {

constexpr std::string_view k_gpt2_pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
constexpr std::string_view k_qwen2_pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view k_llama3_pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

bool is_other(char32_t c) {
  return !is_whitespace(c) && !is_letter(c) && !is_number(c);
}
bool is_newline(char32_t c) {
  return c == '\r' || c == '\n';
}

char32_t lower_ascii(char32_t c) {
  return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

// Length of a contraction ('s 't 're 've 'm 'll 'd) at `i`, or 0.
size_t contraction(std::u32string_view t, size_t i, bool ignore_case) {
  if (t[i] != '\'' || i + 1 >= t.size()) {
    return 0;
  }
  auto at = [&](size_t k) -> char32_t {
    if (k >= t.size()) {
      return 0;
    }
    return ignore_case ? lower_ascii(t[k]) : t[k];
  };
  const char32_t a = at(i + 1);
  if (a == 's' || a == 't' || a == 'm' || a == 'd') {
    return 2;
  }
  const char32_t b = at(i + 2);
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) {
    return 3;
  }
  return 0;
}

template <typename Pred>
size_t run(std::u32string_view t, size_t i, Pred pred) {
  size_t j = i;
  while (j < t.size() && pred(t[j])) {
    ++j;
  }
  return j - i;
}

// \s+(?!\S) then \s+: a whitespace run leaves its last character to the word that follows it.
size_t whitespace(std::u32string_view t, size_t i) {
  const size_t n = run(t, i, is_whitespace);
  if (i + n == t.size() || n == 1) {
    return n;
  }
  return n - 1;
}

size_t gpt2_match(std::u32string_view t, size_t i) {
  if (size_t n = contraction(t, i, false)) {
    return n;
  }
  const size_t sp = (t[i] == ' ' && i + 1 < t.size()) ? 1 : 0;
  for (auto pred : {is_letter, is_number, is_other}) {
    if (sp != 0 && pred(t[i + 1])) {
      return 1 + run(t, i + 1, pred);
    }
    if (pred(t[i])) {
      return run(t, i, pred);
    }
  }
  return whitespace(t, i);
}

size_t qwen2_match(std::u32string_view t, size_t i, size_t max_digits) {
  if (size_t n = contraction(t, i, true)) {
    return n;
  }
  // [^\r\n\p{L}\p{N}]?\p{L}+
  if (!is_newline(t[i]) && !is_letter(t[i]) && !is_number(t[i]) && i + 1 < t.size() && is_letter(t[i + 1])) {
    return 1 + run(t, i + 1, is_letter);
  }
  if (is_letter(t[i])) {
    return run(t, i, is_letter);
  }
  if (is_number(t[i])) {
    return std::min(max_digits, run(t, i, is_number));
  }
  // ' ?[^\s\p{L}\p{N}]+[\r\n]*'
  const size_t sp = (t[i] == ' ' && i + 1 < t.size() && is_other(t[i + 1])) ? 1 : 0;
  if (is_other(t[i + sp])) {
    const size_t n = sp + run(t, i + sp, is_other);
    return n + run(t, i + n, is_newline);
  }
  // \s*[\r\n]+: up to the run's last newline.
  const size_t n = run(t, i, is_whitespace);
  for (size_t k = n; k > 0; --k) {
    if (is_newline(t[i + k - 1])) {
      return k;
    }
  }
  return whitespace(t, i);
}

}  // namespace

std::optional<PreTokenizer> pre_tokenizer_for_pattern(std::string_view regex) {
  if (regex == k_gpt2_pattern) {
    return PreTokenizer::gpt2;
  }
  if (regex == k_qwen2_pattern) {
    return PreTokenizer::qwen2;
  }
  if (regex == k_llama3_pattern) {
    return PreTokenizer::llama3;
  }
  return std::nullopt;
}

void split_words(PreTokenizer kind, std::u32string_view text, std::vector<std::u32string_view>& out) {
  size_t i = 0;
  while (i < text.size()) {
    size_t n = 0;
    switch (kind) {
      case PreTokenizer::gpt2:
        n = gpt2_match(text, i);
        break;
      case PreTokenizer::qwen2:
        n = qwen2_match(text, i, 1);
        break;
      case PreTokenizer::llama3:
        n = qwen2_match(text, i, 3);
        break;
      case PreTokenizer::digits:
        n = is_number(text[i]) ? run(text, i, is_number) : run(text, i, [](char32_t c) { return !is_number(c); });
        break;
      case PreTokenizer::digits_individual:
        n = is_number(text[i]) ? 1 : run(text, i, [](char32_t c) { return !is_number(c); });
        break;
    }
    out.push_back(text.substr(i, n));
    i += n;
  }
}

}  // namespace ca::model
