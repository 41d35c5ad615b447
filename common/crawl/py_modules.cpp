// A small Python scanner: just enough lexing (strings, comments, brackets,
// indentation) to find class and def statements and relate classes by base name.
#include "crawl/py_modules.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string_view>

namespace ca {
namespace {

namespace fs = std::filesystem;

constexpr size_t k_none = std::string::npos;

// What each character of a file is, so later passes can ignore string contents
// and comments without lexing again.
enum class Kind : char { code, string, comment };

struct Source {
  std::string text;        // the file with '\r' removed
  std::vector<Kind> kind;  // one per character of text
};

Source lex(std::string text) {
  std::erase(text, '\r');
  std::vector<Kind> kind(text.size(), Kind::code);
  size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (c == '#') {
      for (; i < text.size() && text[i] != '\n'; ++i) kind[i] = Kind::comment;
      continue;
    }
    if (c != '\'' && c != '"') {
      ++i;
      continue;
    }
    const std::string triple(3, c);
    const bool is_triple = text.compare(i, 3, triple) == 0;
    const size_t quote_len = is_triple ? 3 : 1;
    size_t j = i + quote_len;
    while (j < text.size()) {
      if (text[j] == '\\') {  // an escaped quote or newline never ends the literal
        j += 2;
        continue;
      }
      if (!is_triple && text[j] == '\n') break;  // unterminated: stop at the line end
      if (text.compare(j, quote_len, triple, 0, quote_len) == 0) {
        j += quote_len;
        break;
      }
      ++j;
    }
    j = std::min(j, text.size());
    std::fill(kind.begin() + i, kind.begin() + j, Kind::string);
    i = j;
  }
  return {std::move(text), std::move(kind)};
}

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\f';
}
bool is_word_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || static_cast<unsigned char>(c) >= 0x80;
}
bool is_open(char c) {
  return c == '(' || c == '[' || c == '{';
}
bool is_close(char c) {
  return c == ')' || c == ']' || c == '}';
}

// A statement as Python sees it: physical lines joined while brackets are open,
// a string spans lines, or a line ends in a backslash.
struct LogicalLine {
  size_t begin = 0;  // offset of the first physical line's start
  size_t end = 0;    // offset of the last physical line's end
  int first_line = 0;
  int indent = 0;     // columns of the first physical line's leading whitespace
  bool blank = true;  // only whitespace and comments: irrelevant to indentation
};

int indent_of(const std::string& text, size_t begin) {
  int columns = 0;
  for (size_t i = begin; i < text.size() && (text[i] == ' ' || text[i] == '\t'); ++i) {
    columns = text[i] == ' ' ? columns + 1 : columns / 8 * 8 + 8;
  }
  return columns;
}

std::vector<LogicalLine> split_logical(const Source& src) {
  const std::string& t = src.text;
  std::vector<LogicalLine> lines;
  LogicalLine cur{.first_line = 1};
  int depth = 0;
  int line = 1;
  for (size_t i = 0; i <= t.size(); ++i) {
    if (i < t.size() && t[i] != '\n') {
      if (src.kind[i] == Kind::string) cur.blank = false;
      if (src.kind[i] != Kind::code) continue;
      if (is_open(t[i])) ++depth;
      if (is_close(t[i])) depth = std::max(0, depth - 1);
      if (!is_space(t[i]) && t[i] != '\\') cur.blank = false;
      continue;
    }
    const bool backslash = i > cur.begin && t[i - 1] == '\\' && src.kind[i - 1] == Kind::code;
    if (i < t.size() && (src.kind[i] != Kind::code || depth > 0 || backslash)) {
      ++line;
      continue;
    }
    cur.end = i;
    cur.indent = indent_of(t, cur.begin);
    lines.push_back(cur);
    cur = LogicalLine{.begin = i + 1, .first_line = ++line};
    depth = 0;
  }
  return lines;
}

// Skips whitespace, comments and backslash continuations, but not strings:
// a string is a token.
size_t skip_space(const Source& src, size_t i, size_t end) {
  while (i < end && (src.kind[i] == Kind::comment ||
                     (src.kind[i] == Kind::code && (is_space(src.text[i]) || src.text[i] == '\\')))) {
    ++i;
  }
  return i;
}

std::string read_word(const Source& src, size_t& i, size_t end) {
  const size_t start = i;
  while (i < end && src.kind[i] == Kind::code && is_word_char(src.text[i])) ++i;
  return src.text.substr(start, i - start);
}

// Returns the offset of the bracket closing the one at `open`, or k_none.
size_t match_close(const Source& src, size_t open, size_t end) {
  int depth = 0;
  for (size_t i = open; i < end; ++i) {
    if (src.kind[i] != Kind::code) continue;
    if (is_open(src.text[i])) ++depth;
    if (is_close(src.text[i]) && --depth == 0) return i;
  }
  return k_none;
}

// A `class` or `def` header: the name and its bracketed list (k_none if absent).
struct Header {
  bool is_class = false;
  std::string name;
  size_t open = k_none;
  size_t close = k_none;
};

std::optional<Header> parse_header(const Source& src, const LogicalLine& line) {
  size_t i = skip_space(src, line.begin, line.end);
  std::string keyword = read_word(src, i, line.end);
  if (keyword == "async") {
    i = skip_space(src, i, line.end);
    keyword = read_word(src, i, line.end);
  }
  if (keyword != "class" && keyword != "def") return std::nullopt;
  const size_t name_start = skip_space(src, i, line.end);
  if (name_start == i) return std::nullopt;  // e.g. "classify"
  i = name_start;
  Header header{.is_class = keyword == "class", .name = read_word(src, i, line.end)};
  if (header.name.empty()) return std::nullopt;
  i = skip_space(src, i, line.end);
  if (i < line.end && src.kind[i] == Kind::code && src.text[i] == '(') {
    header.open = i;
    header.close = match_close(src, i, line.end);
    if (header.close == k_none) return std::nullopt;
  }
  return header;
}

// Joins the text of [begin, end) to one line: whitespace outside strings
// becomes one space, none next to brackets; comments are dropped.
std::string normalise(const Source& src, size_t begin, size_t end) {
  std::string out;
  bool pending_space = false;
  for (size_t i = begin; i < end; ++i) {
    const char c = src.text[i];
    if (src.kind[i] == Kind::comment || (src.kind[i] == Kind::code && (is_space(c) || c == '\\'))) {
      pending_space = true;
      continue;
    }
    const bool code = src.kind[i] == Kind::code;
    if (pending_space && !out.empty() && !is_open(out.back()) && !(code && is_close(c))) out += ' ';
    pending_space = false;
    out += c;
  }
  return out;
}

std::string init_signature(const Source& src, const Header& def) {
  std::string sig = normalise(src, def.open, def.close);
  if (!sig.empty() && sig.back() == ',') sig.pop_back();  // "(a, b,\n)" reads as "(a, b)"
  return sig + ')';
}

// One base: the dotted name before any subscript or call, without whitespace.
std::string base_name(const Source& src, size_t begin, size_t end) {
  std::string name;
  for (size_t i = begin; i < end; ++i) {
    if (src.kind[i] != Kind::code) continue;
    const char c = src.text[i];
    if (c == '[' || c == '(') break;
    if (!is_space(c) && c != '\\') name += c;
  }
  return name;
}

std::vector<std::string> parse_bases(const Source& src, const Header& cls) {
  std::vector<std::string> bases;
  if (cls.open == k_none) return bases;
  int depth = 0;
  size_t start = cls.open + 1;
  for (size_t i = cls.open + 1; i <= cls.close; ++i) {
    const bool code = src.kind[i] == Kind::code;
    if (code && is_open(src.text[i])) ++depth;
    if (code && is_close(src.text[i]) && i != cls.close) --depth;
    const bool separator = i == cls.close || (code && depth == 0 && src.text[i] == ',');
    if (!separator) continue;
    std::string name = base_name(src, start, i);
    // `metaclass=...` and `*bases` name no class; the '=' of a keyword is the
    // only one a base can have before its first bracket.
    if (!name.empty() && name[0] != '*' && !name.contains('=')) bases.push_back(name);
    start = i + 1;
  }
  return bases;
}

// Returns the index of the last non-blank logical line of the block opened by
// lines[header]; a one-line statement is its own block.
size_t block_end(const std::vector<LogicalLine>& lines, size_t header) {
  size_t last = header;
  for (size_t k = header + 1; k < lines.size(); ++k) {
    if (lines[k].blank) continue;
    if (lines[k].indent <= lines[header].indent) break;
    last = k;
  }
  return last;
}

size_t leading_blanks(std::string_view line, size_t limit) {
  size_t n = 0;
  while (n < limit && n < line.size() && (line[n] == ' ' || line[n] == '\t')) ++n;
  return n;
}

// Lines of a less indented string literal lose only the blanks they have.
std::string dedented_source(const Source& src, const std::vector<LogicalLine>& lines, size_t def) {
  const size_t begin = lines[def].begin;
  std::string_view body = std::string_view(src.text).substr(begin, lines[block_end(lines, def)].end - begin);
  const size_t width = leading_blanks(body, k_none);
  std::string out;
  while (true) {
    const size_t newline = body.find('\n');
    const std::string_view line = body.substr(0, newline);
    out.append(line.substr(leading_blanks(line, width)));
    out += '\n';
    if (newline == std::string_view::npos) break;
    body.remove_prefix(newline + 1);
  }
  return out;
}

struct ClassInfo {
  PyModule module;  // init_signature/forward_source: the class's own only
  bool has_init = false;
  bool has_forward = false;
};

void collect_classes(const Source& src, const std::string& file, std::vector<ClassInfo>& out) {
  const std::vector<LogicalLine> lines = split_logical(src);
  for (size_t k = 0; k < lines.size(); ++k) {
    const std::optional<Header> cls = parse_header(src, lines[k]);
    if (!cls || !cls->is_class) continue;
    ClassInfo info;
    info.module.name = cls->name;
    info.module.file = file;
    info.module.line = lines[k].first_line;
    info.module.bases = parse_bases(src, *cls);
    const size_t last = block_end(lines, k);
    int body_indent = -1;
    for (size_t m = k + 1; m <= last; ++m) {
      if (lines[m].blank) continue;
      if (body_indent < 0) body_indent = lines[m].indent;
      if (lines[m].indent != body_indent) continue;
      const std::optional<Header> def = parse_header(src, lines[m]);
      if (!def || def->is_class || def->open == k_none) continue;
      // A later definition replaces an earlier one, as in Python (e.g. after @overload stubs).
      if (def->name == "__init__") {
        info.module.init_signature = init_signature(src, *def);
        info.module.init_source = dedented_source(src, lines, m);
        info.has_init = true;
      }
      if (def->name == "forward") {
        info.module.forward_source = dedented_source(src, lines, m);
        info.has_forward = true;
      }
    }
    out.push_back(std::move(info));
  }
}

std::string_view last_component(std::string_view name) {
  const size_t dot = name.rfind('.');
  return dot == std::string_view::npos ? name : name.substr(dot + 1);
}

// Relates classes through their bases, matched by the last dotted component.
class Hierarchy {
 public:
  explicit Hierarchy(const std::vector<ClassInfo>& classes) : m_classes(classes), m_state(classes.size()) {
    for (size_t i = 0; i < classes.size(); ++i) m_by_name[classes[i].module.name].push_back(i);
  }

  bool is_module(size_t i) {
    if (m_state[i] != State::unknown) return m_state[i] == State::module;
    m_state[i] = State::visiting;  // a cycle of bases proves nothing
    bool found = false;
    for (const std::string& base : m_classes[i].module.bases) {
      if (last_component(base) == "Module") found = true;
      for (size_t c : candidates(i, base)) found = found || is_module(c);
    }
    m_state[i] = found ? State::module : State::other;
    return found;
  }

  // The nearest base (depth first, left to right, like a simple MRO) defining
  // the member that `has` selects; returns its index or k_none.
  size_t provider(size_t i, bool ClassInfo::*has) const {
    std::vector<bool> seen(m_classes.size());
    seen[i] = true;
    return provider(i, has, seen);
  }

 private:
  enum class State : char { unknown, visiting, module, other };

  // Classes a base may name: a bare name prefers the class's own file, as
  // Python would; the class itself is excluded (`class Linear(nn.Linear)`).
  std::vector<size_t> candidates(size_t i, const std::string& base) const {
    const auto it = m_by_name.find(std::string(last_component(base)));
    if (it == m_by_name.end()) return {};
    std::vector<size_t> all;
    std::vector<size_t> same_file;
    for (size_t c : it->second) {
      if (c == i) continue;
      all.push_back(c);
      if (m_classes[c].module.file == m_classes[i].module.file) same_file.push_back(c);
    }
    const bool bare = base.find('.') == std::string::npos;
    return bare && !same_file.empty() ? same_file : all;
  }

  size_t provider(size_t i, bool ClassInfo::*has, std::vector<bool>& seen) const {
    for (const std::string& base : m_classes[i].module.bases) {
      for (size_t c : candidates(i, base)) {
        if (seen[c]) continue;
        seen[c] = true;
        if (m_classes[c].*has) return c;
        if (const size_t found = provider(c, has, seen); found != k_none) return found;
      }
    }
    return k_none;
  }

  const std::vector<ClassInfo>& m_classes;
  std::vector<State> m_state;
  std::map<std::string, std::vector<size_t>> m_by_name;
};

std::optional<std::string> read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return text.str();
}

}  // namespace

std::expected<std::vector<PyModule>, std::string> scan_py_modules(const std::string& root) {
  std::error_code ec;
  const fs::path root_path(root);
  if (!fs::exists(root_path, ec)) return std::unexpected(root + ": no such directory");
  if (!fs::is_directory(root_path, ec)) return std::unexpected(root + ": not a directory");

  std::vector<std::pair<std::string, fs::path>> files;
  fs::recursive_directory_iterator it(root_path, fs::directory_options::skip_permission_denied, ec);
  if (ec) return std::unexpected(root + ": " + ec.message());
  for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    if (it->path().extension() != ".py" || !it->is_regular_file(ec)) continue;
    files.emplace_back(it->path().lexically_relative(root_path).generic_string(), it->path());
  }
  std::ranges::sort(files);

  std::vector<ClassInfo> classes;
  for (const auto& [relative, path] : files) {
    if (std::optional<std::string> text = read_file(path)) collect_classes(lex(std::move(*text)), relative, classes);
  }

  Hierarchy hierarchy(classes);
  std::vector<PyModule> modules;
  for (size_t i = 0; i < classes.size(); ++i) {
    if (!hierarchy.is_module(i)) continue;
    PyModule module = classes[i].module;
    const size_t init_from = classes[i].has_init ? i : hierarchy.provider(i, &ClassInfo::has_init);
    if (init_from != k_none) {
      module.init_signature = classes[init_from].module.init_signature;
      module.init_source = classes[init_from].module.init_source;
    }
    const size_t forward_from = classes[i].has_forward ? i : hierarchy.provider(i, &ClassInfo::has_forward);
    if (forward_from != k_none) module.forward_source = classes[forward_from].module.forward_source;
    modules.push_back(std::move(module));
  }
  return modules;
}

}  // namespace ca
