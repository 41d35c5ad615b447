// A small Jinja interpreter with transformers' settings (trim_blocks, lstrip_blocks): the source is cut into
// text, {{ expression }} and {% statement %} pieces, parsed into a tree, and run against the messages.
#include "model/chat_template.h"

#include <cmath>
#include <functional>
#include <map>
#include <optional>

#include "util/atomic_file.h"

namespace ca::model {
namespace {

// ---- values -------------------------------------------------------------------------------------------------

struct Value {
  Json j;
  bool undefined = false;
};

Value undefined_value() {
  return Value{Json(), true};
}

bool truthy(const Value& v) {
  if (v.undefined || v.j.is_null()) {
    return false;
  }
  if (v.j.is_boolean()) {
    return v.j.get<bool>();
  }
  if (v.j.is_number()) {
    return v.j.get<double>() != 0;
  }
  if (v.j.is_string()) {
    return !v.j.get_ref<const std::string&>().empty();  // json::empty() is false for every string
  }
  if (v.j.is_array() || v.j.is_object()) {
    return !v.j.empty();
  }
  return true;
}

void python_json_to(const Json& v, std::string& out) {
  if (v.is_string()) {
    out += '"';
    for (unsigned char c : v.get_ref<const std::string&>()) {
      switch (c) {
        case '"':
          out += "\\\"";
          break;
        case '\\':
          out += "\\\\";
          break;
        case '\n':
          out += "\\n";
          break;
        case '\r':
          out += "\\r";
          break;
        case '\t':
          out += "\\t";
          break;
        case '\b':
          out += "\\b";
          break;
        case '\f':
          out += "\\f";
          break;
        default:
          if (c < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
          } else {
            out += static_cast<char>(c);
          }
      }
    }
    out += '"';
  } else if (v.is_array()) {
    out += '[';
    for (size_t i = 0; i < v.size(); ++i) {
      out += i ? ", " : "";
      python_json_to(v[i], out);
    }
    out += ']';
  } else if (v.is_object()) {
    out += '{';
    bool first = true;
    for (const auto& [k, x] : v.items()) {
      out += first ? "" : ", ";
      first = false;
      python_json_to(Json(k), out);
      out += ": ";
      python_json_to(x, out);
    }
    out += '}';
  } else {
    out += v.dump();
  }
}

// What {{ value }} writes: Python's str() of the value.
std::string to_text(const Value& v) {
  if (v.undefined) {
    return "";
  }
  const Json& j = v.j;
  if (j.is_string()) {
    return j.get<std::string>();
  }
  if (j.is_null()) {
    return "None";
  }
  if (j.is_boolean()) {
    return j.get<bool>() ? "True" : "False";
  }
  if (j.is_number_float()) {
    const double d = j.get<double>();
    if (d == std::floor(d) && std::abs(d) < 1e16) {
      return std::to_string(static_cast<long long>(d)) + ".0";
    }
  }
  return python_json(j);
}

// ---- lexing -------------------------------------------------------------------------------------------------

struct Token {
  enum Kind { name, string, number, op, end } kind = end;
  std::string text;
  Json value;
};

std::expected<std::vector<Token>, std::string> lex(std::string_view s) {
  std::vector<Token> out;
  size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t j = i;
      while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_')) {
        ++j;
      }
      out.push_back({Token::name, std::string(s.substr(i, j - i)), {}});
      i = j;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t j = i;
      while (j < s.size() && (std::isdigit(static_cast<unsigned char>(s[j])) || s[j] == '.')) {
        ++j;
      }
      const std::string t(s.substr(i, j - i));
      out.push_back({Token::number, t, t.find('.') != std::string::npos ? Json(std::stod(t)) : Json(std::stoll(t))});
      i = j;
    } else if (c == '\'' || c == '"') {
      std::string v;
      size_t j = i + 1;
      for (; j < s.size() && s[j] != c; ++j) {
        if (s[j] != '\\' || j + 1 >= s.size()) {
          v += s[j];
          continue;
        }
        const char e = s[++j];
        v += e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e;
      }
      if (j >= s.size()) {
        return std::unexpected("unterminated string");
      }
      out.push_back({Token::string, v, Json(v)});
      i = j + 1;
    } else {
      static const char* two[] = {"==", "!=", "<=", ">=", "//", "**"};
      std::string t(1, c);
      for (const char* op : two) {
        if (s.substr(i, 2) == op) {
          t = op;
        }
      }
      if (std::string("()[]{}.,:|~+-*/%<>=!").find(c) == std::string::npos) {
        return std::unexpected(std::string("unexpected character '") + c + "'");
      }
      out.push_back({Token::op, t, {}});
      i += t.size();
    }
  }
  out.push_back({Token::end, "", {}});
  return out;
}

// ---- expressions --------------------------------------------------------------------------------------------

struct Expr;
using ExprPtr = std::shared_ptr<Expr>;
struct Expr {
  enum Kind { literal, name, list, dict, attr, index, call, filter, test, unary, binary, cond } kind;
  Json value;        // literal
  std::string text;  // name, attribute, filter, test, operator
  std::vector<ExprPtr> args;
};

class ExprParser {
 public:
  explicit ExprParser(std::vector<Token> tokens) : m_t(std::move(tokens)) {}
  const Token& peek() const { return m_t[m_i]; }
  bool at_end() const { return peek().kind == Token::end; }
  bool is(const char* text) const {
    return (peek().kind == Token::op || peek().kind == Token::name) && peek().text == text;
  }
  bool accept(const char* text) {
    if (!is(text)) {
      return false;
    }
    ++m_i;
    return true;
  }
  std::expected<std::string, std::string> name() {
    if (peek().kind != Token::name) {
      return std::unexpected("expected a name, got '" + peek().text + "'");
    }
    return m_t[m_i++].text;
  }
  std::expected<ExprPtr, std::string> expression() {
    auto a = or_expr();
    if (!a || !is("if")) {
      return a;
    }
    ++m_i;
    auto c = or_expr();
    if (!c) {
      return c;
    }
    ExprPtr b = make(Expr::literal, "undefined", {});  // `a if c` without else is undefined when c fails
    if (accept("else")) {
      auto e = expression();
      if (!e) {
        return e;
      }
      b = *e;
    }
    return make(Expr::cond, "", {*a, *c, b});
  }

 private:
  static ExprPtr make(Expr::Kind k, std::string text, std::vector<ExprPtr> args) {
    return std::make_shared<Expr>(Expr{k, Json(), std::move(text), std::move(args)});
  }
  using Next = std::expected<ExprPtr, std::string> (ExprParser::*)();
  std::expected<ExprPtr, std::string> left_assoc(Next next, std::initializer_list<const char*> ops) {
    auto a = (this->*next)();
    while (a) {
      const char* found = nullptr;
      for (const char* op : ops) {
        if (is(op)) {
          found = op;
        }
      }
      if (found == nullptr) {
        break;
      }
      ++m_i;
      auto b = (this->*next)();
      if (!b) {
        return b;
      }
      a = make(Expr::binary, found, {*a, *b});
    }
    return a;
  }
  std::expected<ExprPtr, std::string> or_expr() { return left_assoc(&ExprParser::and_expr, {"or"}); }
  std::expected<ExprPtr, std::string> and_expr() { return left_assoc(&ExprParser::not_expr, {"and"}); }
  std::expected<ExprPtr, std::string> not_expr() {
    if (accept("not")) {
      auto a = not_expr();
      return a ? std::expected<ExprPtr, std::string>(make(Expr::unary, "not", {*a})) : a;
    }
    return compare();
  }
  std::expected<ExprPtr, std::string> compare() {
    auto a = concat();
    while (a) {
      std::string op;
      if (is("==") || is("!=") || is("<") || is(">") || is("<=") || is(">=") || is("in")) {
        op = m_t[m_i++].text;
      } else if (is("not") && m_t[m_i + 1].text == "in") {
        m_i += 2;
        op = "not in";
      } else if (accept("is")) {
        const bool negate = accept("not");
        auto t = name();
        if (!t) {
          return std::unexpected(t.error());
        }
        a = make(Expr::test, *t, {*a});
        if (negate) {
          a = make(Expr::unary, "not", {*a});
        }
        continue;
      } else {
        break;
      }
      auto b = concat();
      if (!b) {
        return b;
      }
      a = make(Expr::binary, op, {*a, *b});
    }
    return a;
  }
  std::expected<ExprPtr, std::string> concat() { return left_assoc(&ExprParser::sum, {"~"}); }
  std::expected<ExprPtr, std::string> sum() { return left_assoc(&ExprParser::product, {"+", "-"}); }
  std::expected<ExprPtr, std::string> product() { return left_assoc(&ExprParser::unary_minus, {"*", "/", "%", "//"}); }
  std::expected<ExprPtr, std::string> unary_minus() {
    if (accept("-")) {
      auto a = unary_minus();
      return a ? std::expected<ExprPtr, std::string>(make(Expr::unary, "-", {*a})) : a;
    }
    return postfix();
  }
  std::expected<std::vector<ExprPtr>, std::string> call_args() {
    std::vector<ExprPtr> args;
    while (!accept(")")) {
      if (!args.empty() && !accept(",")) {
        return std::unexpected("expected ',' in arguments");
      }
      if (peek().kind == Token::name && m_t[m_i + 1].text == "=") {
        return std::unexpected("keyword arguments are not supported");
      }
      auto a = expression();
      if (!a) {
        return std::unexpected(a.error());
      }
      args.push_back(*a);
    }
    return args;
  }
  std::expected<ExprPtr, std::string> postfix() {
    auto a = primary();
    while (a) {
      if (accept(".")) {
        auto n = name();
        if (!n) {
          return std::unexpected(n.error());
        }
        a = make(Expr::attr, *n, {*a});
      } else if (accept("[")) {
        auto i = expression();
        if (!i || !accept("]")) {
          return std::unexpected(i ? "expected ']'" : i.error());
        }
        a = make(Expr::index, "", {*a, *i});
      } else if (accept("(")) {
        auto args = call_args();
        if (!args) {
          return std::unexpected(args.error());
        }
        args->insert(args->begin(), *a);
        a = make(Expr::call, "", std::move(*args));
      } else if (accept("|")) {
        auto f = name();
        if (!f) {
          return std::unexpected(f.error());
        }
        std::vector<ExprPtr> args{*a};
        if (accept("(")) {
          auto more = call_args();
          if (!more) {
            return std::unexpected(more.error());
          }
          args.insert(args.end(), more->begin(), more->end());
        }
        a = make(Expr::filter, *f, std::move(args));
      } else {
        break;
      }
    }
    return a;
  }
  std::expected<ExprPtr, std::string> primary() {
    const Token t = peek();
    if (t.kind == Token::string || t.kind == Token::number) {
      ++m_i;
      ExprPtr e = make(Expr::literal, "", {});
      e->value = t.value;
      // Adjacent string literals concatenate, as in Python.
      while (t.kind == Token::string && peek().kind == Token::string) {
        e->value = e->value.get<std::string>() + m_t[m_i++].value.get<std::string>();
      }
      return e;
    }
    if (t.kind == Token::name) {
      ++m_i;
      ExprPtr e = make(Expr::literal, "", {});
      if (t.text == "true" || t.text == "True") {
        e->value = true;
      } else if (t.text == "false" || t.text == "False") {
        e->value = false;
      } else if (t.text == "none" || t.text == "None") {
        e->value = nullptr;
      } else {
        return make(Expr::name, t.text, {});
      }
      return e;
    }
    if (accept("(")) {
      auto e = expression();
      if (!e || !accept(")")) {
        return std::unexpected(e ? "expected ')'" : e.error());
      }
      return e;
    }
    if (accept("[")) {
      std::vector<ExprPtr> items;
      while (!accept("]")) {
        if (!items.empty() && !accept(",")) {
          return std::unexpected("expected ',' in a list");
        }
        auto e = expression();
        if (!e) {
          return e;
        }
        items.push_back(*e);
      }
      return make(Expr::list, "", std::move(items));
    }
    if (accept("{")) {
      std::vector<ExprPtr> items;
      while (!accept("}")) {
        if (!items.empty() && !accept(",")) {
          return std::unexpected("expected ',' in a dict");
        }
        auto k = expression();
        if (!k || !accept(":")) {
          return std::unexpected(k ? "expected ':' in a dict" : k.error());
        }
        auto v = expression();
        if (!v) {
          return v;
        }
        items.push_back(*k);
        items.push_back(*v);
      }
      return make(Expr::dict, "", std::move(items));
    }
    return std::unexpected("unexpected '" + t.text + "'");
  }

  std::vector<Token> m_t;
  size_t m_i = 0;
};

// ---- statements ---------------------------------------------------------------------------------------------

struct Node {
  enum Kind { raw, output, if_, for_, set } kind;
  int line = 0;
  std::string text;                                             // text; for: loop variables joined by ','; set: name
  std::vector<std::pair<ExprPtr, std::vector<Node>>> branches;  // if: (condition or null for else, body)
  ExprPtr expr;                                                 // output, set value, for iterable
  ExprPtr filter;                                               // for ... if filter
  std::vector<Node> body, else_body;                            // for
};

struct Piece {
  enum Kind { text, expr, stmt } kind;
  std::string content;
  int line;
};

int line_at(const std::string& s, size_t pos) {
  return 1 + static_cast<int>(std::count(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(pos), '\n'));
}

// Cuts the source into pieces, applying the whitespace rules: '-' strips all whitespace on its side; block and
// comment tags also take the indentation before them (lstrip_blocks) and one newline after them (trim_blocks).
std::expected<std::vector<Piece>, std::string> cut(const std::string& src) {
  std::vector<Piece> out;
  size_t i = 0;
  bool strip_next = false;
  while (i <= src.size()) {
    size_t open = src.find('{', i);
    while (open != std::string::npos && open + 1 < src.size() &&
           std::string("{%#").find(src[open + 1]) == std::string::npos) {
      open = src.find('{', open + 1);
    }
    if (open + 1 >= src.size()) {
      open = std::string::npos;
    }
    std::string text = src.substr(i, open == std::string::npos ? std::string::npos : open - i);
    if (strip_next) {
      text.erase(0, text.find_first_not_of(" \t\r\n"));
    }
    if (open == std::string::npos) {
      out.push_back({Piece::text, text, line_at(src, i)});
      break;
    }
    const char kind = src[open + 1];
    const bool left_dash = open + 2 < src.size() && src[open + 2] == '-';
    if (left_dash) {
      text.erase(text.find_last_not_of(" \t\r\n") + 1);
    } else if (kind != '{') {
      // lstrip_blocks: the tag's indentation goes when only spaces and tabs stand between the line's start and it.
      const size_t nl = open == 0 ? std::string::npos : src.rfind('\n', open - 1);
      const size_t line_start = nl == std::string::npos ? 0 : nl + 1;
      if (line_start >= i && src.find_first_not_of(" \t", line_start) >= open && text.size() >= open - line_start) {
        text.erase(text.size() - (open - line_start));
      }
    }
    out.push_back({Piece::text, text, line_at(src, i)});
    const size_t start = open + 2 + (left_dash ? 1 : 0);
    size_t close;
    std::string content;
    if (kind == '#') {
      close = src.find("#}", start);
      if (close == std::string::npos) {
        return std::unexpected("line " + std::to_string(line_at(src, open)) + ": unterminated comment");
      }
    } else {
      // The end of the tag, outside string literals (a string may hold "}}").
      const std::string end = kind == '{' ? "}}" : "%}";
      char quote = 0;
      close = std::string::npos;
      for (size_t k = start; k + 1 < src.size(); ++k) {
        if (quote != 0) {
          if (src[k] == '\\') {
            ++k;
          } else if (src[k] == quote) {
            quote = 0;
          }
        } else if (src[k] == '\'' || src[k] == '"') {
          quote = src[k];
        } else if (src.compare(k, 2, end) == 0) {
          close = k;
          break;
        }
      }
      if (close == std::string::npos) {
        return std::unexpected("line " + std::to_string(line_at(src, open)) + ": unterminated tag");
      }
    }
    const bool right_dash = close > start && src[close - 1] == '-';
    content = src.substr(start, close - start - (right_dash ? 1 : 0));
    if (kind != '#') {
      out.push_back({kind == '{' ? Piece::expr : Piece::stmt, content, line_at(src, open)});
    }
    i = close + 2;
    strip_next = right_dash;
    if (!right_dash && kind != '{' && i < src.size() && src[i] == '\n') {
      ++i;  // trim_blocks
    }
  }
  return out;
}

class StmtParser {
 public:
  explicit StmtParser(std::vector<Piece> pieces) : m_p(std::move(pieces)) {}

  // Parses nodes until a statement whose first word is in `stops` (returned in `stop`), or the end.
  std::expected<std::vector<Node>, std::string> block(std::initializer_list<const char*> stops, std::string& stop,
                                                      ExprParser** stop_rest) {
    std::vector<Node> nodes;
    while (m_i < m_p.size()) {
      const Piece& p = m_p[m_i++];
      const std::string where = "line " + std::to_string(p.line) + ": ";
      if (p.kind == Piece::text) {
        if (!p.content.empty()) {
          nodes.push_back(Node{Node::raw, p.line, p.content, {}, {}, {}, {}, {}});
        }
        continue;
      }
      auto tokens = lex(p.content);
      if (!tokens) {
        return std::unexpected(where + tokens.error());
      }
      m_parsers.push_back(std::make_unique<ExprParser>(std::move(*tokens)));
      ExprParser& e = *m_parsers.back();
      if (p.kind == Piece::expr) {
        auto x = e.expression();
        if (!x || !e.at_end()) {
          return std::unexpected(where + (x ? "unexpected '" + e.peek().text + "'" : x.error()));
        }
        nodes.push_back(Node{Node::output, p.line, "", {}, *x, {}, {}, {}});
        continue;
      }
      auto word = e.name();
      if (!word) {
        return std::unexpected(where + word.error());
      }
      for (const char* s : stops) {
        if (*word == s) {
          stop = *word;
          *stop_rest = &e;
          return nodes;
        }
      }
      auto node = statement(*word, e, p.line);
      if (!node) {
        return std::unexpected(where + node.error());
      }
      nodes.push_back(std::move(*node));
    }
    if (stops.size() != 0) {
      return std::unexpected("missing {% " + std::string(*stops.begin() == std::string("endfor") ? "endfor" : "endif") +
                             " %}");
    }
    return nodes;
  }

 private:
  std::expected<Node, std::string> statement(const std::string& word, ExprParser& e, int line) {
    Node n{Node::raw, line, "", {}, {}, {}, {}, {}};
    std::string stop;
    ExprParser* rest = nullptr;
    if (word == "if") {
      n.kind = Node::if_;
      auto cond = e.expression();
      while (true) {
        if (!cond) {
          return std::unexpected(cond.error());
        }
        auto body = block({"elif", "else", "endif"}, stop, &rest);
        if (!body) {
          return std::unexpected(body.error());
        }
        n.branches.emplace_back(*cond, std::move(*body));
        if (stop == "endif") {
          return n;
        }
        if (stop == "else") {
          cond = ExprPtr();
          auto last = block({"endif"}, stop, &rest);
          if (!last) {
            return std::unexpected(last.error());
          }
          n.branches.emplace_back(nullptr, std::move(*last));
          return n;
        }
        cond = rest->expression();
      }
    }
    if (word == "for") {
      n.kind = Node::for_;
      auto v = e.name();
      if (!v) {
        return std::unexpected(v.error());
      }
      n.text = *v;
      while (e.accept(",")) {
        auto w = e.name();
        if (!w) {
          return std::unexpected(w.error());
        }
        n.text += "," + *w;
      }
      if (!e.accept("in")) {
        return std::unexpected("expected 'in'");
      }
      // The iterable stops before a trailing `if` filter: parse it without the conditional expression.
      auto it = e.expression();
      if (!it) {
        return std::unexpected(it.error());
      }
      n.expr = *it;
      if ((*it)->kind == Expr::cond) {  // `for x in xs if c` parsed as `xs if c else none`
        n.expr = (*it)->args[0];
        n.filter = (*it)->args[1];
      }
      auto body = block({"else", "endfor"}, stop, &rest);
      if (!body) {
        return std::unexpected(body.error());
      }
      n.body = std::move(*body);
      if (stop == "else") {
        auto other = block({"endfor"}, stop, &rest);
        if (!other) {
          return std::unexpected(other.error());
        }
        n.else_body = std::move(*other);
      }
      return n;
    }
    if (word == "set") {
      n.kind = Node::set;
      auto v = e.name();
      if (!v || !e.accept("=")) {
        return std::unexpected("only `set name = expression` is supported");
      }
      n.text = *v;
      auto x = e.expression();
      if (!x) {
        return std::unexpected(x.error());
      }
      n.expr = *x;
      return n;
    }
    return std::unexpected("statement '" + word + "' is not supported");
  }

  std::vector<Piece> m_p;
  size_t m_i = 0;
  std::vector<std::unique_ptr<ExprParser>> m_parsers;
};

// ---- evaluation ---------------------------------------------------------------------------------------------

using Scope = std::vector<std::map<std::string, Value>>;
using Result = std::expected<Value, std::string>;

std::string strip(const std::string& s, const std::string& chars, bool left, bool right) {
  size_t a = left ? s.find_first_not_of(chars) : 0;
  if (a == std::string::npos) {
    return "";
  }
  size_t b = right ? s.find_last_not_of(chars) : s.size() - 1;
  return s.substr(a, b - a + 1);
}

class Evaluator {
 public:
  explicit Evaluator(Scope& scope) : m_scope(scope) {}

  Result eval(const Expr& e) {
    switch (e.kind) {
      case Expr::literal:
        return e.text == "undefined" ? undefined_value() : Value{e.value};
      case Expr::name:
        for (auto it = m_scope.rbegin(); it != m_scope.rend(); ++it) {
          if (auto f = it->find(e.text); f != it->end()) {
            return f->second;
          }
        }
        return undefined_value();
      case Expr::list: {
        Json out = Json::array();
        for (const auto& a : e.args) {
          auto v = eval(*a);
          if (!v) {
            return v;
          }
          out.push_back(v->j);
        }
        return Value{out};
      }
      case Expr::dict: {
        Json out = Json::object();
        for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
          auto k = eval(*e.args[i]), v = eval(*e.args[i + 1]);
          if (!k || !v) {
            return !k ? k : v;
          }
          out[to_text(*k)] = v->j;
        }
        return Value{out};
      }
      case Expr::attr: {
        auto o = eval(*e.args[0]);
        if (!o) {
          return o;
        }
        if (o->j.is_object() && o->j.contains(e.text)) {
          return Value{o->j[e.text]};
        }
        return undefined_value();
      }
      case Expr::index: {
        auto o = eval(*e.args[0]), k = eval(*e.args[1]);
        if (!o || !k) {
          return !o ? o : k;
        }
        return index(*o, *k);
      }
      case Expr::unary: {
        auto a = eval(*e.args[0]);
        if (!a) {
          return a;
        }
        if (e.text == "not") {
          return Value{!truthy(*a)};
        }
        if (!a->j.is_number()) {
          return std::unexpected("unary '-' of a non-number");
        }
        return Value{a->j.is_number_integer() ? Json(-a->j.get<int64_t>()) : Json(-a->j.get<double>())};
      }
      case Expr::cond: {
        auto c = eval(*e.args[1]);
        if (!c) {
          return c;
        }
        return eval(*e.args[truthy(*c) ? 0 : 2]);
      }
      case Expr::binary:
        return binary(e);
      case Expr::test:
        return test(e);
      case Expr::filter:
        return filter(e);
      case Expr::call:
        return call(e);
    }
    return std::unexpected("bad expression");
  }

 private:
  static Result index(const Value& o, const Value& k) {
    if (o.j.is_object() && k.j.is_string()) {
      return o.j.contains(k.j.get<std::string>()) ? Value{o.j[k.j.get<std::string>()]} : undefined_value();
    }
    if ((o.j.is_array() || o.j.is_string()) && k.j.is_number_integer()) {
      const int64_t n =
          o.j.is_array() ? static_cast<int64_t>(o.j.size()) : static_cast<int64_t>(o.j.get<std::string>().size());
      int64_t i = k.j.get<int64_t>();
      i = i < 0 ? i + n : i;
      if (i < 0 || i >= n) {
        return undefined_value();
      }
      return o.j.is_array() ? Value{o.j[static_cast<size_t>(i)]}
                            : Value{Json(o.j.get<std::string>().substr(static_cast<size_t>(i), 1))};
    }
    return undefined_value();
  }

  Result binary(const Expr& e) {
    auto a = eval(*e.args[0]);
    if (!a) {
      return a;
    }
    if (e.text == "and") {
      return truthy(*a) ? eval(*e.args[1]) : a;
    }
    if (e.text == "or") {
      return truthy(*a) ? a : eval(*e.args[1]);
    }
    auto b = eval(*e.args[1]);
    if (!b) {
      return b;
    }
    const Json &x = a->j, &y = b->j;
    const std::string& op = e.text;
    if (op == "~") {
      return Value{to_text(*a) + to_text(*b)};
    }
    if (op == "==") {
      return Value{x == y};
    }
    if (op == "!=") {
      return Value{x != y};
    }
    if (op == "in" || op == "not in") {
      bool found = false;
      if (y.is_string() && x.is_string()) {
        found = y.get<std::string>().find(x.get<std::string>()) != std::string::npos;
      } else if (y.is_array()) {
        found = std::find(y.begin(), y.end(), x) != y.end();
      } else if (y.is_object() && x.is_string()) {
        found = y.contains(x.get<std::string>());
      } else {
        return std::unexpected("'in' needs a string, list or mapping on its right");
      }
      return Value{op == "in" ? found : !found};
    }
    if (op == "+" && x.is_string() && y.is_string()) {
      return Value{x.get<std::string>() + y.get<std::string>()};
    }
    if (op == "+" && x.is_array() && y.is_array()) {
      Json out = x;
      out.insert(out.end(), y.begin(), y.end());
      return Value{out};
    }
    if ((op == "<" || op == ">" || op == "<=" || op == ">=") && x.is_string() && y.is_string()) {
      const int c = x.get<std::string>().compare(y.get<std::string>());
      return Value{op == "<" ? c < 0 : op == ">" ? c > 0 : op == "<=" ? c <= 0 : c >= 0};
    }
    if (!x.is_number() || !y.is_number()) {
      return std::unexpected("operator '" + op + "' on " + std::string(a->undefined ? "undefined" : x.type_name()) +
                             " and " + std::string(b->undefined ? "undefined" : y.type_name()));
    }
    const bool ints = x.is_number_integer() && y.is_number_integer();
    const double p = x.get<double>(), q = y.get<double>();
    if (op == "<") return Value{p < q};
    if (op == ">") return Value{p > q};
    if (op == "<=") return Value{p <= q};
    if (op == ">=") return Value{p >= q};
    if (op == "+") return Value{ints ? Json(x.get<int64_t>() + y.get<int64_t>()) : Json(p + q)};
    if (op == "-") return Value{ints ? Json(x.get<int64_t>() - y.get<int64_t>()) : Json(p - q)};
    if (op == "*") return Value{ints ? Json(x.get<int64_t>() * y.get<int64_t>()) : Json(p * q)};
    if (q == 0) {
      return std::unexpected("division by zero");
    }
    if (op == "/") return Value{p / q};
    if (op == "//") return Value{ints ? Json(static_cast<int64_t>(std::floor(p / q))) : Json(std::floor(p / q))};
    return Value{ints ? Json(((x.get<int64_t>() % y.get<int64_t>()) + y.get<int64_t>()) % y.get<int64_t>())
                      : Json(std::fmod(p, q))};
  }

  Result test(const Expr& e) {
    auto a = eval(*e.args[0]);
    if (!a) {
      return a;
    }
    const Json& j = a->j;
    const std::string& t = e.text;
    if (t == "defined") return Value{!a->undefined};
    if (t == "undefined") return Value{a->undefined};
    if (t == "none") return Value{!a->undefined && j.is_null()};
    if (t == "string") return Value{j.is_string()};
    if (t == "mapping") return Value{j.is_object()};
    if (t == "sequence" || t == "iterable") return Value{j.is_array() || j.is_string() || j.is_object()};
    if (t == "number") return Value{j.is_number()};
    if (t == "boolean") return Value{j.is_boolean()};
    if (t == "true") return Value{j.is_boolean() && j.get<bool>()};
    if (t == "false") return Value{j.is_boolean() && !j.get<bool>()};
    return std::unexpected("test '" + t + "' is not supported");
  }

  Result filter(const Expr& e) {
    std::vector<Value> args;
    for (const auto& x : e.args) {
      auto v = eval(*x);
      if (!v) {
        return v;
      }
      args.push_back(*v);
    }
    const Json& j = args[0].j;
    const std::string& f = e.text;
    if (f == "tojson") return Value{python_json(j)};
    if (f == "trim") return Value{strip(to_text(args[0]), " \t\r\n\f\v", true, true)};
    if (f == "string") return Value{to_text(args[0])};
    if (f == "length" || f == "count") return Value{j.is_string() ? j.get<std::string>().size() : j.size()};
    if (f == "lower" || f == "upper") {
      std::string s = to_text(args[0]);
      for (char& c : s) {
        c = static_cast<char>(f == "lower" ? std::tolower(static_cast<unsigned char>(c))
                                           : std::toupper(static_cast<unsigned char>(c)));
      }
      return Value{s};
    }
    if (f == "first" || f == "last") {
      if (!j.is_array() || j.empty()) return undefined_value();
      return Value{f == "first" ? j.front() : j.back()};
    }
    if (f == "default") return args[0].undefined && args.size() > 1 ? args[1] : args[0];
    if (f == "items") {
      Json out = Json::array();
      for (const auto& [k, v] : j.items()) out.push_back(Json::array({k, v}));
      return Value{out};
    }
    if (f == "join") {
      std::string out;
      const std::string sep = args.size() > 1 ? to_text(args[1]) : "";
      for (size_t i = 0; i < j.size(); ++i) out += (i ? sep : "") + to_text(Value{j[i]});
      return Value{out};
    }
    return std::unexpected("filter '" + f + "' is not supported");
  }

  Result call(const Expr& e) {
    const Expr& callee = *e.args[0];
    std::vector<Value> args;
    for (size_t i = 1; i < e.args.size(); ++i) {
      auto v = eval(*e.args[i]);
      if (!v) {
        return v;
      }
      args.push_back(*v);
    }
    if (callee.kind == Expr::name && callee.text == "raise_exception") {
      return std::unexpected("raise_exception: " + (args.empty() ? std::string() : to_text(args[0])));
    }
    if (callee.kind != Expr::attr) {
      return std::unexpected("calling '" + callee.text + "' is not supported");
    }
    auto self = eval(*callee.args[0]);
    if (!self) {
      return self;
    }
    const std::string& m = callee.text;
    const Json& j = self->j;
    if (j.is_string()) {
      const std::string s = j.get<std::string>();
      const std::string chars = args.empty() ? " \t\r\n\f\v" : to_text(args[0]);
      if (m == "strip") return Value{strip(s, chars, true, true)};
      if (m == "lstrip") return Value{strip(s, chars, true, false)};
      if (m == "rstrip") return Value{strip(s, chars, false, true)};
      if ((m == "startswith" || m == "endswith") && args.size() == 1) {
        const std::string x = to_text(args[0]);
        return Value{m == "startswith" ? s.starts_with(x) : s.ends_with(x)};
      }
      if (m == "upper" || m == "lower") {
        std::string out = s;
        for (char& c : out)
          c = static_cast<char>(m == "lower" ? std::tolower(static_cast<unsigned char>(c))
                                             : std::toupper(static_cast<unsigned char>(c)));
        return Value{out};
      }
      if (m == "split" && args.size() == 1) {
        const std::string sep = to_text(args[0]);
        Json out = Json::array();
        size_t start = 0, at;
        while (!sep.empty() && (at = s.find(sep, start)) != std::string::npos) {
          out.push_back(s.substr(start, at - start));
          start = at + sep.size();
        }
        out.push_back(s.substr(start));
        return Value{out};
      }
    }
    if (j.is_object()) {
      if (m == "items") {
        Json out = Json::array();
        for (const auto& [k, v] : j.items()) out.push_back(Json::array({k, v}));
        return Value{out};
      }
      if (m == "keys" || m == "values") {
        Json out = Json::array();
        for (const auto& [k, v] : j.items()) out.push_back(m == "keys" ? Json(k) : v);
        return Value{out};
      }
      if (m == "get" && !args.empty()) {
        const std::string k = to_text(args[0]);
        if (j.contains(k)) return Value{j[k]};
        return args.size() > 1 ? args[1] : Value{Json()};
      }
    }
    return std::unexpected("method '" + m + "' of " + std::string(self->undefined ? "undefined" : j.type_name()) +
                           " is not supported");
  }

  Scope& m_scope;
};

std::expected<void, std::string> run(const std::vector<Node>& nodes, Scope& scope, std::string& out) {
  Evaluator ev(scope);
  for (const Node& n : nodes) {
    const std::string where = "line " + std::to_string(n.line) + ": ";
    switch (n.kind) {
      case Node::raw:
        out += n.text;
        break;
      case Node::output: {
        auto v = ev.eval(*n.expr);
        if (!v) return std::unexpected(where + v.error());
        out += to_text(*v);
        break;
      }
      case Node::set: {
        auto v = ev.eval(*n.expr);
        if (!v) return std::unexpected(where + v.error());
        scope.back()[n.text] = *v;
        break;
      }
      case Node::if_:
        for (const auto& [cond, body] : n.branches) {
          bool take = cond == nullptr;
          if (!take) {
            auto c = ev.eval(*cond);
            if (!c) return std::unexpected(where + c.error());
            take = truthy(*c);
          }
          if (take) {
            if (auto r = run(body, scope, out); !r) return r;
            break;
          }
        }
        break;
      case Node::for_: {
        auto seq = ev.eval(*n.expr);
        if (!seq) return std::unexpected(where + seq.error());
        Json items = Json::array();
        if (seq->j.is_array()) {
          items = seq->j;
        } else if (seq->j.is_object()) {
          for (const auto& [k, v] : seq->j.items()) items.push_back(k);
        } else if (!seq->undefined && !seq->j.is_null()) {
          return std::unexpected(where + "cannot loop over " + seq->j.type_name());
        }
        std::vector<std::string> names;
        for (size_t a = 0, b; a <= n.text.size(); a = b + 1) {
          b = n.text.find(',', a);
          b = b == std::string::npos ? n.text.size() : b;
          names.push_back(n.text.substr(a, b - a));
        }
        auto bind = [&](std::map<std::string, Value>& frame, const Json& item) {
          if (names.size() == 1) {
            frame[names[0]] = Value{item};
            return;
          }
          for (size_t k = 0; k < names.size(); ++k)
            frame[names[k]] = item.is_array() && k < item.size() ? Value{item[k]} : undefined_value();
        };
        if (n.filter) {  // `for x in xs if c`: loop over the items that pass
          Json kept = Json::array();
          for (const Json& item : items) {
            scope.emplace_back();
            bind(scope.back(), item);
            auto c = ev.eval(*n.filter);
            scope.pop_back();
            if (!c) return std::unexpected(where + c.error());
            if (truthy(*c)) kept.push_back(item);
          }
          items = kept;
        }
        const int64_t length = static_cast<int64_t>(items.size());
        for (int64_t k = 0; k < length; ++k) {
          scope.emplace_back();
          bind(scope.back(), items[static_cast<size_t>(k)]);
          scope.back()["loop"] = Value{Json{{"index0", k},
                                            {"index", k + 1},
                                            {"first", k == 0},
                                            {"last", k == length - 1},
                                            {"length", length},
                                            {"revindex", length - k},
                                            {"revindex0", length - k - 1}}};
          auto r = run(n.body, scope, out);
          scope.pop_back();
          if (!r) return r;
        }
        if (length == 0) {
          if (auto r = run(n.else_body, scope, out); !r) return r;
        }
        break;
      }
    }
  }
  return {};
}

}  // namespace

std::string python_json(const Json& value) {
  std::string out;
  python_json_to(value, out);
  return out;
}

struct ChatTemplate::Impl {
  std::vector<Node> nodes;
};

ChatTemplate::ChatTemplate(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}
ChatTemplate::ChatTemplate(ChatTemplate&&) noexcept = default;
ChatTemplate& ChatTemplate::operator=(ChatTemplate&&) noexcept = default;
ChatTemplate::~ChatTemplate() = default;

std::expected<ChatTemplate, std::string> ChatTemplate::parse(const std::string& source) {
  auto pieces = cut(source);
  if (!pieces) {
    return std::unexpected(pieces.error());
  }
  StmtParser parser(std::move(*pieces));
  std::string stop;
  ExprParser* rest = nullptr;
  auto nodes = parser.block({}, stop, &rest);
  if (!nodes) {
    return std::unexpected(nodes.error());
  }
  auto impl = std::make_unique<Impl>();
  impl->nodes = std::move(*nodes);
  return ChatTemplate(std::move(impl));
}

std::expected<ChatTemplate, std::string> ChatTemplate::load(const std::filesystem::path& dir) {
  if (auto text = read_file((dir / "chat_template.jinja").string())) {
    auto t = parse(*text);
    return t ? std::move(t) : std::unexpected((dir / "chat_template.jinja").string() + ": " + t.error());
  }
  auto config = read_file((dir / "tokenizer_config.json").string());
  if (!config) {
    return std::unexpected(dir.string() + ": neither chat_template.jinja nor tokenizer_config.json");
  }
  const Json j = Json::parse(*config, nullptr, false);
  if (j.is_discarded() || !j.contains("chat_template") || !j["chat_template"].is_string()) {
    return std::unexpected((dir / "tokenizer_config.json").string() + ": no chat_template string");
  }
  auto t = parse(j["chat_template"].get<std::string>());
  return t ? std::move(t) : std::unexpected((dir / "tokenizer_config.json").string() + ": chat_template: " + t.error());
}

std::expected<std::string, std::string> ChatTemplate::render(const Json& messages, const Json& tools,
                                                             bool add_generation_prompt, const Json& extra) const {
  Scope scope(1);
  scope[0]["messages"] = Value{messages};
  scope[0]["tools"] = tools.is_null() || tools.empty() ? undefined_value() : Value{tools};
  scope[0]["add_generation_prompt"] = Value{add_generation_prompt};
  for (const auto& [k, v] : extra.items()) {
    scope[0][k] = Value{v};
  }
  std::string out;
  if (auto r = run(m_impl->nodes, scope, out); !r) {
    return std::unexpected(r.error());
  }
  return out;
}

}  // namespace ca::model
