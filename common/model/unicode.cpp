// Unicode tables and NFC (Unicode Standard Annex #15: decompose, order marks canonically, compose).
#include "model/unicode.h"

#include <algorithm>
#include <cstdint>
#include <span>

namespace ca::model {
namespace {

struct CodeRange {
  char32_t first;
  char32_t last;
};
struct CodeValue {
  char32_t cp;
  int value;
};
struct Decomposition {
  char32_t cp;
  char32_t parts[2];  // 0 where the decomposition is a single code point
};
struct Composition {
  char32_t first;
  char32_t second;
  char32_t composite;
};

#include "model/unicode_tables.inc"

bool in_ranges(std::span<const CodeRange> ranges, char32_t cp) {
  auto it =
      std::upper_bound(ranges.begin(), ranges.end(), cp, [](char32_t c, const CodeRange& r) { return c < r.first; });
  return it != ranges.begin() && cp <= std::prev(it)->last;
}

// Hangul syllables compose and decompose by arithmetic (Unicode 3.12).
constexpr char32_t k_s_base = 0xAC00, k_l_base = 0x1100, k_v_base = 0x1161, k_t_base = 0x11A7;
constexpr int k_l_count = 19, k_v_count = 21, k_t_count = 28, k_n_count = k_v_count * k_t_count;
constexpr int k_s_count = k_l_count * k_n_count;

void decompose(char32_t cp, std::u32string& out) {
  if (cp >= k_s_base && cp < k_s_base + k_s_count) {
    const int s = static_cast<int>(cp - k_s_base);
    out.push_back(k_l_base + s / k_n_count);
    out.push_back(k_v_base + (s % k_n_count) / k_t_count);
    if (s % k_t_count != 0) {
      out.push_back(k_t_base + s % k_t_count);
    }
    return;
  }
  auto it = std::lower_bound(std::begin(k_decompositions), std::end(k_decompositions), cp,
                             [](const Decomposition& d, char32_t c) { return d.cp < c; });
  if (it == std::end(k_decompositions) || it->cp != cp) {
    out.push_back(cp);
    return;
  }
  decompose(it->parts[0], out);
  if (it->parts[1] != 0) {
    decompose(it->parts[1], out);
  }
}

// The primary composite of a pair, or 0.
char32_t compose_pair(char32_t a, char32_t b) {
  if (a >= k_l_base && a < k_l_base + k_l_count && b >= k_v_base && b < k_v_base + k_v_count) {
    return k_s_base + ((a - k_l_base) * k_v_count + (b - k_v_base)) * k_t_count;
  }
  if (a >= k_s_base && a < k_s_base + k_s_count && (a - k_s_base) % k_t_count == 0 && b > k_t_base &&
      b < k_t_base + k_t_count) {
    return a + (b - k_t_base);
  }
  auto it = std::lower_bound(std::begin(k_compositions), std::end(k_compositions), std::pair{a, b},
                             [](const Composition& c, std::pair<char32_t, char32_t> key) {
                               return std::pair{c.first, c.second} < key;
                             });
  if (it == std::end(k_compositions) || it->first != a || it->second != b) {
    return 0;
  }
  return it->composite;
}

}  // namespace

std::u32string utf8_decode(std::string_view text) {
  std::u32string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    const auto b0 = static_cast<unsigned char>(text[i]);
    if (b0 < 0x80) {
      out.push_back(b0);
      ++i;
      continue;
    }
    // The length a lead byte announces and the range its second byte must lie in (no overlongs, no surrogates,
    // nothing past U+10FFFF); a bad sequence's longest valid prefix becomes one U+FFFD (Unicode's "maximal
    // subpart" rule, as Rust's from_utf8_lossy).
    int len = 0;
    unsigned lo = 0x80, hi = 0xBF;
    if (b0 >= 0xC2 && b0 <= 0xDF) {
      len = 2;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
      len = 3;
      lo = b0 == 0xE0 ? 0xA0 : 0x80;
      hi = b0 == 0xED ? 0x9F : 0xBF;
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
      len = 4;
      lo = b0 == 0xF0 ? 0x90 : 0x80;
      hi = b0 == 0xF4 ? 0x8F : 0xBF;
    }
    char32_t cp = len == 2 ? (b0 & 0x1F) : len == 3 ? (b0 & 0x0F) : (b0 & 0x07);
    int k = 1;
    for (; len > 0 && k < len && i + k < text.size(); ++k) {
      const auto b = static_cast<unsigned char>(text[i + k]);
      if (b < lo || b > hi) {
        break;
      }
      lo = 0x80;
      hi = 0xBF;
      cp = (cp << 6) | (b & 0x3F);
    }
    if (len == 0 || k < len) {
      out.push_back(0xFFFD);
      i += k;
      continue;
    }
    out.push_back(cp);
    i += len;
  }
  return out;
}

void utf8_append(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string utf8_encode(std::u32string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char32_t cp : text) {
    utf8_append(out, cp);
  }
  return out;
}

bool is_letter(char32_t cp) {
  if (cp < 0x80) {
    return (cp | 0x20) >= 'a' && (cp | 0x20) <= 'z';
  }
  return in_ranges(k_letter_ranges, cp);
}

bool is_number(char32_t cp) {
  if (cp < 0x80) {
    return cp >= '0' && cp <= '9';
  }
  return in_ranges(k_number_ranges, cp);
}

bool is_whitespace(char32_t cp) {
  return (cp >= 0x9 && cp <= 0xD) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

int combining_class(char32_t cp) {
  if (cp < 0x300) {
    return 0;
  }
  auto it = std::lower_bound(std::begin(k_combining_classes), std::end(k_combining_classes), cp,
                             [](const CodeValue& v, char32_t c) { return v.cp < c; });
  return it != std::end(k_combining_classes) && it->cp == cp ? it->value : 0;
}

std::u32string nfc(std::u32string_view text) {
  // Text below U+0300 is already in NFC (Latin-1 has no combining marks and no decomposable pairs of its own).
  if (std::all_of(text.begin(), text.end(), [](char32_t c) { return c < 0x300; })) {
    return std::u32string(text);
  }
  std::u32string d;
  d.reserve(text.size() + 8);
  for (char32_t cp : text) {
    decompose(cp, d);
  }
  // Canonical ordering: each run of non-starters sorted stably by combining class.
  for (size_t i = 0; i < d.size();) {
    if (combining_class(d[i]) == 0) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < d.size() && combining_class(d[j]) != 0) {
      ++j;
    }
    std::stable_sort(d.begin() + static_cast<std::ptrdiff_t>(i), d.begin() + static_cast<std::ptrdiff_t>(j),
                     [](char32_t a, char32_t b) { return combining_class(a) < combining_class(b); });
    i = j;
  }
  // Canonical composition: a character joins the last starter unless a character between them blocks it.
  std::u32string out;
  out.reserve(d.size());
  size_t starter = std::u32string::npos;
  int last_class = -1;
  for (char32_t cp : d) {
    const int cls = combining_class(cp);
    const bool blocked =
        starter == std::u32string::npos || (last_class != -1 && (last_class == 0 || last_class >= cls));
    if (!blocked) {
      if (char32_t c = compose_pair(out[starter], cp); c != 0) {
        out[starter] = c;
        continue;
      }
    }
    if (cls == 0) {
      starter = out.size();
      last_class = -1;
    } else {
      last_class = cls;
    }
    out.push_back(cp);
  }
  return out;
}

}  // namespace ca::model
