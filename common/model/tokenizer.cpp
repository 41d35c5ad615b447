// Byte-level BPE as the `tokenizers` library runs it: added tokens split out first (leftmost-longest), the rest
// normalized, pre-tokenized into words, each word's bytes mapped through GPT-2's byte alphabet and merged by rank.
#include "model/tokenizer.h"

#include <algorithm>
#include <array>
#include <fstream>
#include <mutex>
#include <sstream>
#include <unordered_map>

#include "util/jsonl.h"

#include "model/pretokenize.h"
#include "model/unicode.h"

namespace ca::model {
namespace {

// GPT-2's bytes_to_unicode: printable Latin-1 stands for itself, the other bytes for U+0100 onwards.
std::array<char32_t, 256> byte_alphabet() {
  std::array<char32_t, 256> map{};
  char32_t next = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    map[b] = printable ? static_cast<char32_t>(b) : next++;
  }
  return map;
}

struct AddedToken {
  std::string content;
  int32_t id = 0;
  bool special = false;
  bool lstrip = false;
  bool rstrip = false;
  bool single_word = false;
  bool normalized = false;
};

struct PairHash {
  size_t operator()(uint64_t k) const { return std::hash<uint64_t>()(k * 0x9E3779B97F4A7C15ull); }
};

uint64_t pair_key(int32_t a, int32_t b) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
}

enum class Decoder { byte_fallback, fuse, replace, byte_level };
struct DecodeStep {
  Decoder kind;
  std::string pattern, content;  // for replace
};

bool is_word_char(char32_t c) {
  return is_letter(c) || is_number(c) || c == '_';
}

}  // namespace

struct Tokenizer::Impl {
  std::unordered_map<std::string, int32_t> vocab;
  std::vector<std::string> id_to_token;
  std::unordered_map<uint64_t, std::pair<int32_t, int32_t>, PairHash> merges;  // (a, b) -> (rank, merged id)
  std::array<int32_t, 256> byte_ids{};                                         // -1: byte's symbol not in vocab
  std::array<char32_t, 256> alphabet = byte_alphabet();
  std::unordered_map<char32_t, uint8_t> alphabet_inverse;
  std::vector<AddedToken> added;  // longest first
  std::unordered_map<std::string, int32_t> added_ids;
  std::vector<bool> special;
  bool nfc = false;
  std::vector<PreTokenizer> pre_tokenizers;
  bool add_prefix_space = false;
  bool byte_fallback = false;
  bool ignore_merges = false;
  std::optional<int32_t> unk;
  std::vector<DecodeStep> decoder;
  mutable std::mutex cache_mutex;
  mutable std::unordered_map<std::string, std::vector<int32_t>> cache;

  void bpe_word(const std::string& bytes, std::vector<int32_t>& out) const;
  void encode_plain(std::string_view text, std::vector<int32_t>& out) const;
  std::vector<std::pair<std::string_view, const AddedToken*>> split_added(std::string_view text, bool normalized_pass,
                                                                          SpecialTokens special) const;
};

void Tokenizer::Impl::bpe_word(const std::string& bytes, std::vector<int32_t>& out) const {
  {
    std::lock_guard lock(cache_mutex);
    if (auto it = cache.find(bytes); it != cache.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<int32_t> word;
  std::string mapped;
  for (unsigned char b : bytes) {
    utf8_append(mapped, alphabet[b]);
  }
  if (auto it = vocab.find(mapped); ignore_merges && it != vocab.end()) {
    word.push_back(it->second);
  } else {
    for (unsigned char b : bytes) {
      if (byte_ids[b] >= 0) {
        word.push_back(byte_ids[b]);
        continue;
      }
      char hex[8];
      std::snprintf(hex, sizeof hex, "<0x%02X>", b);
      if (auto fb = vocab.find(hex); byte_fallback && fb != vocab.end()) {
        word.push_back(fb->second);
      } else if (unk && (word.empty() || word.back() != *unk)) {  // fuse_unk: the byte alphabet has no unknowns
        word.push_back(*unk);
      }
    }
    // Merge the lowest-ranked pair, leftmost first, until no pair merges.
    while (word.size() > 1) {
      int32_t best_rank = INT32_MAX;
      size_t best = 0;
      int32_t best_id = 0;
      for (size_t i = 0; i + 1 < word.size(); ++i) {
        auto it = merges.find(pair_key(word[i], word[i + 1]));
        if (it != merges.end() && it->second.first < best_rank) {
          best_rank = it->second.first;
          best = i;
          best_id = it->second.second;
        }
      }
      if (best_rank == INT32_MAX) {
        break;
      }
      word[best] = best_id;
      word.erase(word.begin() + static_cast<std::ptrdiff_t>(best) + 1);
    }
  }
  out.insert(out.end(), word.begin(), word.end());
  std::lock_guard lock(cache_mutex);
  if (cache.size() > 100000) {
    cache.clear();
  }
  cache.emplace(bytes, std::move(word));
}

void Tokenizer::Impl::encode_plain(std::string_view text, std::vector<int32_t>& out) const {
  std::u32string cps = utf8_decode(text);  // already normalized (encode)
  if (add_prefix_space && !cps.empty() && !is_whitespace(cps.front())) {
    cps.insert(cps.begin(), U' ');
  }
  std::vector<std::u32string_view> words{std::u32string_view(cps)};
  for (PreTokenizer p : pre_tokenizers) {
    std::vector<std::u32string_view> next;
    for (std::u32string_view w : words) {
      split_words(p, w, next);
    }
    words = std::move(next);
  }
  for (std::u32string_view w : words) {
    bpe_word(utf8_encode(w), out);
  }
}

// Cuts `text` at added tokens: (piece, token) for tokens, (piece, nullptr) for the text between them. The first
// pass (raw text) finds the tokens that are not normalized, the second (normalized text) those that are.
std::vector<std::pair<std::string_view, const AddedToken*>> Tokenizer::Impl::split_added(std::string_view text,
                                                                                         bool normalized_pass,
                                                                                         SpecialTokens special) const {
  std::vector<std::pair<std::string_view, const AddedToken*>> out;
  size_t plain_start = 0;
  size_t i = 0;
  auto usable = [&](const AddedToken& t) {
    return t.normalized == normalized_pass && !(t.special && special == SpecialTokens::as_text);
  };
  while (i < text.size()) {
    const AddedToken* hit = nullptr;
    for (const AddedToken& t : added) {  // longest first, so the first that matches here is the longest
      if (usable(t) && text.substr(i, t.content.size()) == t.content) {
        if (t.single_word) {
          auto before = utf8_decode(text.substr(0, i));
          auto after = utf8_decode(text.substr(i + t.content.size()));
          if ((!before.empty() && is_word_char(before.back())) || (!after.empty() && is_word_char(after.front()))) {
            continue;
          }
        }
        hit = &t;
        break;
      }
    }
    if (hit == nullptr) {
      ++i;
      continue;
    }
    size_t start = i;
    size_t end = i + hit->content.size();
    if (hit->lstrip) {
      while (start > plain_start && std::isspace(static_cast<unsigned char>(text[start - 1]))) {
        --start;
      }
    }
    if (hit->rstrip) {
      while (end < text.size() && std::isspace(static_cast<unsigned char>(text[end]))) {
        ++end;
      }
    }
    if (start > plain_start) {
      out.emplace_back(text.substr(plain_start, start - plain_start), nullptr);
    }
    out.emplace_back(text.substr(start, end - start), hit);
    plain_start = i = end;
  }
  if (plain_start < text.size()) {
    out.emplace_back(text.substr(plain_start), nullptr);
  }
  return out;
}

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

std::expected<Tokenizer, std::string> Tokenizer::load(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) {
    return std::unexpected(path.string() + ": cannot open");
  }
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json json = nlohmann::json::parse(text.str(), nullptr, false);
  if (json.is_discarded()) {
    return std::unexpected(path.string() + ": " + json_parse_error(text.str()));
  }
  return from_json(json, path.string());
}

namespace {

std::expected<void, std::string> read_normalizer(const nlohmann::json& n, bool& nfc, const std::string& where) {
  if (n.is_null()) {
    return {};
  }
  const std::string type = n.value("type", "");
  if (type == "NFC") {
    nfc = true;
    return {};
  }
  if (type == "Sequence") {
    for (const nlohmann::json& s : n.value("normalizers", nlohmann::json::array())) {
      if (auto r = read_normalizer(s, nfc, where); !r) {
        return r;
      }
    }
    return {};
  }
  return std::unexpected(where + ": normalizer '" + type + "' is not supported (NFC and Sequence are)");
}

std::expected<void, std::string> read_pre_tokenizer(const nlohmann::json& p, std::vector<PreTokenizer>& out,
                                                    bool& add_prefix_space, const std::string& where) {
  if (p.is_null()) {
    return {};
  }
  const std::string type = p.value("type", "");
  if (type == "Sequence") {
    for (const nlohmann::json& s : p.value("pretokenizers", nlohmann::json::array())) {
      if (auto r = read_pre_tokenizer(s, out, add_prefix_space, where); !r) {
        return r;
      }
    }
    return {};
  }
  if (type == "ByteLevel") {
    add_prefix_space = add_prefix_space || p.value("add_prefix_space", false);
    if (p.value("use_regex", true)) {
      out.push_back(PreTokenizer::gpt2);
    }
    return {};
  }
  if (type == "Digits") {
    out.push_back(p.value("individual_digits", false) ? PreTokenizer::digits_individual : PreTokenizer::digits);
    return {};
  }
  if (type == "Split") {
    const nlohmann::json pattern = p.value("pattern", nlohmann::json::object());
    const std::string regex = pattern.value("Regex", pattern.value("String", ""));
    auto which = pre_tokenizer_for_pattern(regex);
    if (!which || p.value("behavior", "") != "Isolated" || p.value("invert", false)) {
      return std::unexpected(where + ": Split pre-tokenizer with pattern '" + regex + "' and behavior '" +
                             p.value("behavior", "") + "' is not supported (GPT-2's and Qwen2's, Isolated, are)");
    }
    out.push_back(*which);
    return {};
  }
  return std::unexpected(where + ": pre-tokenizer '" + type + "' is not supported");
}

std::expected<void, std::string> read_decoder(const nlohmann::json& d, std::vector<DecodeStep>& out,
                                              const std::string& where) {
  if (d.is_null()) {
    return {};
  }
  const std::string type = d.value("type", "");
  if (type == "Sequence") {
    for (const nlohmann::json& s : d.value("decoders", nlohmann::json::array())) {
      if (auto r = read_decoder(s, out, where); !r) {
        return r;
      }
    }
    return {};
  }
  if (type == "ByteLevel") {
    out.push_back({Decoder::byte_level, {}, {}});
  } else if (type == "ByteFallback") {
    out.push_back({Decoder::byte_fallback, {}, {}});
  } else if (type == "Fuse") {
    out.push_back({Decoder::fuse, {}, {}});
  } else if (type == "Replace" && d["pattern"].contains("String")) {
    out.push_back({Decoder::replace, d["pattern"]["String"].get<std::string>(), d.value("content", "")});
  } else {
    return std::unexpected(where + ": decoder '" + type + "' is not supported");
  }
  return {};
}

}  // namespace

std::expected<Tokenizer, std::string> Tokenizer::from_json(const nlohmann::json& json, const std::string& where) {
  auto impl = std::make_unique<Impl>();
  const nlohmann::json& model = json.value("model", nlohmann::json::object());
  if (model.value("type", "BPE") != "BPE" || !model.contains("vocab") || !model["vocab"].is_object()) {
    return std::unexpected(where + ": model: only BPE with a vocab is supported");
  }
  // An empty prefix or suffix (the GGUF conversion of Qwen2 writes "") is the same as none.
  auto affix = [&](const char* key) {
    const nlohmann::json& value = model.value(key, nlohmann::json());
    return !value.is_null() && !(value.is_string() && value.get<std::string>().empty());
  };
  if (affix("continuing_subword_prefix") || affix("end_of_word_suffix")) {
    return std::unexpected(where + ": model: subword prefixes and suffixes are not supported");
  }
  int32_t size = 0;
  for (const auto& [token, id] : model["vocab"].items()) {
    impl->vocab.emplace(token, id.get<int32_t>());
    size = std::max(size, id.get<int32_t>() + 1);
  }
  for (const nlohmann::json& a : json.value("added_tokens", nlohmann::json::array())) {
    size = std::max(size, a["id"].get<int32_t>() + 1);
  }
  impl->id_to_token.resize(static_cast<size_t>(size));
  impl->special.assign(static_cast<size_t>(size), false);
  for (const auto& [token, id] : impl->vocab) {
    impl->id_to_token[static_cast<size_t>(id)] = token;
  }
  int32_t rank = 0;
  for (const nlohmann::json& m : model.value("merges", nlohmann::json::array())) {
    std::string a, b;
    if (m.is_array() && m.size() == 2) {
      a = m[0].get<std::string>();
      b = m[1].get<std::string>();
    } else if (m.is_string() && m.get<std::string>().find(' ') != std::string::npos) {
      const std::string s = m.get<std::string>();
      a = s.substr(0, s.find(' '));
      b = s.substr(s.find(' ') + 1);
    } else {
      return std::unexpected(where + ": model.merges[" + std::to_string(rank) + "]: not a pair");
    }
    auto ia = impl->vocab.find(a), ib = impl->vocab.find(b), ic = impl->vocab.find(a + b);
    if (ia == impl->vocab.end() || ib == impl->vocab.end() || ic == impl->vocab.end()) {
      return std::unexpected(where + ": model.merges[" + std::to_string(rank) + "]: '" + a + " " + b +
                             "' names a token not in the vocab");
    }
    impl->merges.try_emplace(pair_key(ia->second, ib->second), rank, ic->second);
    ++rank;
  }
  for (int b = 0; b < 256; ++b) {
    std::string s;
    utf8_append(s, impl->alphabet[b]);
    auto it = impl->vocab.find(s);
    impl->byte_ids[b] = it == impl->vocab.end() ? -1 : it->second;
    impl->alphabet_inverse[impl->alphabet[b]] = static_cast<uint8_t>(b);
  }
  impl->byte_fallback = model.value("byte_fallback", false);
  impl->ignore_merges = model.value("ignore_merges", false);
  if (auto u = model.value("unk_token", nlohmann::json()); u.is_string()) {
    if (auto it = impl->vocab.find(u.get<std::string>()); it != impl->vocab.end()) {
      impl->unk = it->second;
    }
  }
  for (const nlohmann::json& a : json.value("added_tokens", nlohmann::json::array())) {
    AddedToken t{a["content"].get<std::string>(), a["id"].get<int32_t>(),   a.value("special", false),
                 a.value("lstrip", false),        a.value("rstrip", false), a.value("single_word", false),
                 a.value("normalized", false)};
    impl->id_to_token[static_cast<size_t>(t.id)] = t.content;
    impl->special[static_cast<size_t>(t.id)] = t.special;
    impl->added_ids[t.content] = t.id;
    impl->added.push_back(std::move(t));
  }
  std::stable_sort(impl->added.begin(), impl->added.end(),
                   [](const AddedToken& x, const AddedToken& y) { return x.content.size() > y.content.size(); });
  if (auto r = read_normalizer(json.value("normalizer", nlohmann::json()), impl->nfc, where + ": normalizer"); !r) {
    return std::unexpected(r.error());
  }
  if (auto r = read_pre_tokenizer(json.value("pre_tokenizer", nlohmann::json()), impl->pre_tokenizers,
                                  impl->add_prefix_space, where + ": pre_tokenizer");
      !r) {
    return std::unexpected(r.error());
  }
  if (auto r = read_decoder(json.value("decoder", nlohmann::json()), impl->decoder, where + ": decoder"); !r) {
    return std::unexpected(r.error());
  }
  return Tokenizer(std::move(impl));
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, SpecialTokens special) const {
  std::vector<int32_t> out;
  for (auto [raw_piece, raw_token] : m_impl->split_added(text, false, special)) {
    if (raw_token != nullptr) {
      out.push_back(raw_token->id);
      continue;
    }
    // Tokens marked normalized match the normalized text; NFC leaves the ASCII of such tokens as it is.
    std::string normalized = m_impl->nfc ? utf8_encode(nfc(utf8_decode(raw_piece))) : std::string(raw_piece);
    for (auto [piece, token] : m_impl->split_added(normalized, true, special)) {
      if (token != nullptr) {
        out.push_back(token->id);
      } else {
        m_impl->encode_plain(piece, out);
      }
    }
  }
  return out;
}

std::string Tokenizer::decode(std::span<const int32_t> ids, SkipSpecial skip) const {
  std::vector<std::string> tokens;
  for (int32_t id : ids) {
    if (id < 0 || id >= vocab_size() || (skip == SkipSpecial::yes && is_special(id))) {
      continue;
    }
    tokens.push_back(m_impl->id_to_token[static_cast<size_t>(id)]);
  }
  for (const DecodeStep& step : m_impl->decoder) {
    std::vector<std::string> next;
    switch (step.kind) {
      case Decoder::fuse: {
        std::string all;
        for (const auto& t : tokens) {
          all += t;
        }
        next.push_back(std::move(all));
        break;
      }
      case Decoder::replace:
        for (auto t : tokens) {
          for (size_t at = 0; !step.pattern.empty() && (at = t.find(step.pattern, at)) != std::string::npos;) {
            t.replace(at, step.pattern.size(), step.content);
            at += step.content.size();
          }
          next.push_back(std::move(t));
        }
        break;
      case Decoder::byte_fallback: {
        std::string bytes;
        auto flush = [&] {
          if (bytes.empty()) {
            return;
          }
          // Bytes that are not UTF-8 become one U+FFFD each, as tokenizers' ByteFallback does.
          const std::u32string cps = utf8_decode(bytes);
          const bool valid = std::find(cps.begin(), cps.end(), U'\uFFFD') == cps.end();
          next.push_back(valid ? bytes : [&] {
            std::string r;
            for (size_t k = 0; k < bytes.size(); ++k) {
              r += "\xEF\xBF\xBD";
            }
            return r;
          }());
          bytes.clear();
        };
        for (auto& t : tokens) {
          unsigned v = 0;
          if (t.size() == 6 && t.starts_with("<0x") && t.ends_with(">") && std::sscanf(t.c_str() + 3, "%2X", &v) == 1) {
            bytes.push_back(static_cast<char>(v));
            continue;
          }
          flush();
          next.push_back(std::move(t));
        }
        flush();
        break;
      }
      case Decoder::byte_level: {
        // Each token's characters back to bytes; a token with a character outside the alphabet stays as it is.
        std::string bytes;
        for (const auto& t : tokens) {
          const std::u32string cps = utf8_decode(t);
          std::string mapped;
          bool all = true;
          for (char32_t c : cps) {
            auto it = m_impl->alphabet_inverse.find(c);
            if (it == m_impl->alphabet_inverse.end()) {
              all = false;
              break;
            }
            mapped.push_back(static_cast<char>(it->second));
          }
          bytes += all ? mapped : t;
        }
        next.push_back(utf8_encode(utf8_decode(bytes)));
        break;
      }
    }
    tokens = std::move(next);
  }
  std::string out;
  for (const auto& t : tokens) {
    out += t;
  }
  return out;
}

std::string Tokenizer::token_bytes(int32_t id) const {
  if (id < 0 || id >= vocab_size()) {
    return {};
  }
  const std::string& t = m_impl->id_to_token[static_cast<size_t>(id)];
  if (m_impl->added_ids.contains(t)) {
    return t;
  }
  std::string bytes;
  for (char32_t c : utf8_decode(t)) {
    auto it = m_impl->alphabet_inverse.find(c);
    if (it == m_impl->alphabet_inverse.end()) {
      return t;
    }
    bytes.push_back(static_cast<char>(it->second));
  }
  return bytes;
}

std::optional<int32_t> Tokenizer::token_id(std::string_view token) const {
  if (auto it = m_impl->added_ids.find(std::string(token)); it != m_impl->added_ids.end()) {
    return it->second;
  }
  if (auto it = m_impl->vocab.find(std::string(token)); it != m_impl->vocab.end()) {
    return it->second;
  }
  return std::nullopt;
}

bool Tokenizer::is_special(int32_t id) const {
  return id >= 0 && id < vocab_size() && m_impl->special[static_cast<size_t>(id)];
}

int32_t Tokenizer::vocab_size() const {
  return static_cast<int32_t>(m_impl->id_to_token.size());
}

}  // namespace ca::model
