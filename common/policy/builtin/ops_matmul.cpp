// Matrix products (linear, matmul, mm, bmm, addmm, baddbmm) as one batched-GEMM step; bias and addend terms become
// pointwise values that the epilogue of the GEMM computes.
#include <algorithm>
#include <cctype>
#include <cmath>

#include "policy/builtin/ops_util.h"

namespace ca::builtin {
namespace {

using Result = std::expected<void, std::string>;

// The shape of a batch dims broadcast, or an error.
std::expected<std::vector<int64_t>, std::string> broadcast(const std::vector<int64_t>& a,
                                                           const std::vector<int64_t>& b) {
  std::vector<int64_t> out(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < out.size(); ++i) {
    int64_t x = i < a.size() ? a[a.size() - 1 - i] : 1;
    int64_t y = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (x != y && x != 1 && y != 1) return std::unexpected("batch dims do not broadcast");
    out[out.size() - 1 - i] = x == 1 ? y : x;
  }
  return out;
}

// The batch stride of an operand whose batch dims are `dims` in an output batch of `out`: one matrix each, or one
// matrix for all.
std::expected<int64_t, std::string> batch_stride(const std::vector<int64_t>& dims, const std::vector<int64_t>& out,
                                                 int64_t matrix) {
  int64_t count = product(dims, 0, dims.size());
  if (count == 1) return 0;
  if (count == product(out, 0, out.size())) return matrix;
  return std::unexpected("a batch broadcast over some dims but not others");
}

// out = alpha * A @ B for A [..., M, K] and B [..., K, N] (or [N, K] when b_transposed), batch dims broadcast.
std::expected<int, std::string> gemm(Lowering& lowering, int a, int b, bool b_transposed, double alpha,
                                     std::vector<int64_t> a_shape, std::vector<int64_t> b_shape,
                                     std::vector<int64_t> out_tail) {
  if (a_shape.size() < 2 || b_shape.size() < 2) return std::unexpected("matrix operand with fewer than 2 dims");
  Step step;
  step.kind = StepKind::matmul;
  step.a = a;
  step.b = b;
  step.b_transposed = b_transposed;
  step.alpha = alpha;
  step.m = a_shape[a_shape.size() - 2];
  step.k = a_shape.back();
  int64_t b_k = b_transposed ? b_shape.back() : b_shape[b_shape.size() - 2];
  step.n = b_transposed ? b_shape[b_shape.size() - 2] : b_shape.back();
  if (b_k != step.k)
    return std::unexpected("inner dims differ: " + std::to_string(step.k) + " and " + std::to_string(b_k));
  std::vector<int64_t> a_batch(a_shape.begin(), a_shape.end() - 2);
  std::vector<int64_t> b_batch(b_shape.begin(), b_shape.end() - 2);
  auto batch = broadcast(a_batch, b_batch);
  if (!batch) return std::unexpected(batch.error());
  auto a_stride = batch_stride(a_batch, *batch, step.m * step.k);
  auto b_stride = batch_stride(b_batch, *batch, step.k * step.n);
  if (!a_stride || !b_stride) return std::unexpected(!a_stride ? a_stride.error() : b_stride.error());
  step.batch = product(*batch, 0, batch->size());
  step.a_batch_stride = *a_stride;
  step.b_batch_stride = *b_stride;
  Val out;
  out.shape = *batch;
  out.shape.insert(out.shape.end(), out_tail.begin(), out_tail.end());
  if (product(out.shape, 0, out.shape.size()) != step.batch * step.m * step.n) return std::unexpected("matmul shape");
  step.out = lowering.add(std::move(out));
  int id = step.out;
  lowering.add_step(std::move(step));
  lowering.note_pattern("matmul");
  return id;
}

Result bind_plus(Lowering& lowering, const Node& node, int product_id, int addend, double beta) {
  if (addend < 0 || beta == 0) {
    lowering.bind(node.outputs[0], product_id);
    return {};
  }
  auto sum = lowering.pointwise("($0 + " + float_literal(beta) + " * $1)", {product_id, addend});
  if (!sum) return std::unexpected(sum.error());
  if (lowering.val(*sum).shape != lowering.val(product_id).shape)
    return std::unexpected("addend broadcasts the product");
  lowering.bind(node.outputs[0], *sum);
  return {};
}

Result matmul(Lowering& lowering, const Json& args, const Node& node) {
  auto a = lowering.tensor(args.at("self"));
  auto b = lowering.tensor(args.at("other"));
  if (!a || !b) return std::unexpected(!a ? a.error() : b.error());
  std::vector<int64_t> sa = lowering.val(*a).shape, sb = lowering.val(*b).shape;
  if (sa.empty() || sb.empty()) return std::unexpected("matmul of a 0-d tensor");
  std::expected<int, std::string> out;
  if (sa.size() == 1 && sb.size() == 1) out = gemm(lowering, *a, *b, false, 1, {1, sa[0]}, {sb[0], 1}, {});
  if (sa.size() == 1 && sb.size() >= 2) {
    out = gemm(lowering, *a, *b, false, 1, {1, sa[0]}, sb, {sb.back()});
  }
  if (sa.size() >= 2 && sb.size() == 1) {
    std::vector<int64_t> tail(sa.begin(), sa.end() - 1);
    out = gemm(lowering, *a, *b, false, 1, {product(sa, 0, sa.size() - 1), sa.back()}, {sb[0], 1}, tail);
  }
  if (sa.size() >= 2 && sb.size() == 2) {
    std::vector<int64_t> tail(sa.begin(), sa.end() - 1);
    tail.push_back(sb[1]);
    out = gemm(lowering, *a, *b, false, 1, {product(sa, 0, sa.size() - 1), sa.back()}, sb, tail);
  }
  if (sa.size() == 2 && sb.size() > 2) out = gemm(lowering, *a, *b, false, 1, sa, sb, {sa[0], sb.back()});
  if (sa.size() > 2 && sb.size() > 2) out = gemm(lowering, *a, *b, false, 1, sa, sb, {sa[sa.size() - 2], sb.back()});
  if (!out) return std::unexpected(out.error());
  lowering.bind(node.outputs[0], *out);
  return {};
}

// `src` with its dims in `order` (a permute view; none when the order is already the identity), then seen as `shape`
// (an alias; none when the shape is already that): `src` itself where neither is needed, so a product that is the
// output as it is gets written there, not copied.
int view_as(Lowering& lowering, int src, const std::vector<int>& order, std::vector<int64_t> shape) {
  bool identity = true;
  for (size_t d = 0; d < order.size(); ++d) identity = identity && order[d] == static_cast<int>(d);
  if (identity && lowering.val(src).shape == shape) return src;
  if (!identity) src = permute_view(lowering, src, order);
  Val alias;
  alias.kind = ValKind::alias;
  alias.args = {src};
  alias.shape = std::move(shape);
  return lowering.add(std::move(alias));
}

// Two-operand einsum as one batched GEMM: each letter is a batch letter (both operands and the output), a row letter
// (the first operand and the output), a column letter (the second and the output) or a contracted one (both
// operands, not the output). The operands are permuted to [batch, rows, contracted] and [batch, contracted, columns],
// the product [batch, rows, columns] is permuted to the output's order. Not covered: one or three operands, `...`, a
// letter twice in one operand (diagonals), a letter summed within one operand, size-1 broadcasting.
Result einsum(Lowering& lowering, const Json& args, const Node& node) {
  std::string equation;
  for (char c : args.at("equation").get<std::string>()) {
    if (c != ' ') equation += c;
  }
  const Json& tensors = args.at("tensors");
  if (!tensors.is_array() || tensors.size() != 2) return std::unexpected("einsum of other than two operands");
  if (equation.find("...") != std::string::npos) return std::unexpected("einsum with '...'");
  const size_t arrow = equation.find("->");
  const std::string inputs = equation.substr(0, arrow);
  const size_t comma = inputs.find(',');
  if (comma == std::string::npos) return std::unexpected("einsum equation without two operands");
  const std::string spec[2] = {inputs.substr(0, comma), inputs.substr(comma + 1)};
  std::string out_spec;
  if (arrow != std::string::npos) {
    out_spec = equation.substr(arrow + 2);
  } else {  // implicit output: the letters that appear once, in alphabetical order
    for (char c = 'A'; c <= 'z'; ++c) {
      if (std::count(inputs.begin(), inputs.end(), c) == 1) out_spec += c;
    }
  }
  int ids[2];
  std::map<char, int64_t> size;
  for (int k = 0; k < 2; ++k) {
    auto id = lowering.tensor(tensors[k]);
    if (!id) return std::unexpected(id.error());
    ids[k] = *id;
    const std::vector<int64_t>& shape = lowering.val(*id).shape;
    if (spec[k].size() != shape.size()) return std::unexpected("einsum operand rank differs from its letters");
    for (size_t d = 0; d < shape.size(); ++d) {
      const char c = spec[k][d];
      if (!std::isalpha(static_cast<unsigned char>(c)))
        return std::unexpected("einsum letter '" + std::string(1, c) + "'");
      if (std::count(spec[k].begin(), spec[k].end(), c) != 1)
        return std::unexpected("einsum diagonal (a repeated letter)");
      if (size.contains(c) && size[c] != shape[d])
        return std::unexpected("einsum sizes of '" + std::string(1, c) + "' differ");
      size[c] = shape[d];
    }
  }
  auto in = [&](const std::string& text, char c) { return text.find(c) != std::string::npos; };
  std::string batch, rows, columns, contracted;
  for (char c : out_spec) {
    if (!size.contains(c) || std::count(out_spec.begin(), out_spec.end(), c) != 1)
      return std::unexpected("einsum output letter '" + std::string(1, c) + "'");
    if (in(spec[0], c) && in(spec[1], c))
      batch += c;
    else if (in(spec[0], c))
      rows += c;
    else
      columns += c;
  }
  for (char c : spec[0]) {
    if (in(out_spec, c)) continue;
    if (!in(spec[1], c)) return std::unexpected("einsum sums a letter of one operand alone");
    contracted += c;
  }
  for (char c : spec[1]) {
    if (!in(out_spec, c) && !in(spec[0], c)) return std::unexpected("einsum sums a letter of one operand alone");
  }
  auto positions = [](const std::string& spec, const std::string& letters) {
    std::vector<int> order;
    for (char c : letters) order.push_back(static_cast<int>(spec.find(c)));
    return order;
  };
  auto extent = [&](const std::string& letters) {
    int64_t n = 1;
    for (char c : letters) n *= size[c];
    return n;
  };
  auto sizes = [&](const std::string& letters) {
    std::vector<int64_t> shape;
    for (char c : letters) shape.push_back(size[c]);
    return shape;
  };
  const int64_t nb = extent(batch), m = extent(rows), n = extent(columns), k = extent(contracted);
  // Without batch letters the product is 2-d, shaped as the output's rows and columns, which is often the output.
  std::vector<int64_t> a_shape = {m, k}, b_shape = {k, n};
  if (!batch.empty()) {
    a_shape.insert(a_shape.begin(), nb);
    b_shape.insert(b_shape.begin(), nb);
  }
  const int a = view_as(lowering, ids[0], positions(spec[0], batch + rows + contracted), a_shape);
  const int b = view_as(lowering, ids[1], positions(spec[1], batch + contracted + columns), b_shape);
  auto product_id = gemm(lowering, a, b, false, 1, a_shape, b_shape, sizes(rows + columns));
  if (!product_id) return std::unexpected(product_id.error());
  const std::string product_spec = batch + rows + columns;
  const std::vector<int64_t> out_shape = sizes(out_spec);
  const int seen = view_as(lowering, *product_id, {}, sizes(product_spec));
  lowering.bind(node.outputs[0], view_as(lowering, seen, positions(product_spec, out_spec), out_shape));
  return {};
}

// scaled_dot_product_attention as softmax(q @ k^T * scale + mask) @ v: two batched products and a softmax over the
// keys. The causal mask keeps key j <= query i (reading the scores' own coordinates, as tril does); a float mask is
// added. Not covered: dropout (it draws random numbers), boolean masks, grouped-query heads, batch dims that differ.
Result attention(Lowering& lowering, const Json& args, const Node& node) {
  auto q = lowering.tensor(args.at("query"));
  auto k = lowering.tensor(args.at("key"));
  auto v = lowering.tensor(args.at("value"));
  auto mask = lowering.optional_tensor(args.at("attn_mask"));
  if (!q || !k || !v || !mask) return std::unexpected(!q ? q.error() : !k ? k.error() : !v ? v.error() : mask.error());
  if (args.at("dropout_p").get<double>() != 0) return std::unexpected("attention with dropout");
  if (args.at("enable_gqa").get<bool>()) return std::unexpected("attention with grouped-query heads");
  const std::vector<int64_t> sq = lowering.val(*q).shape, sk = lowering.val(*k).shape, sv = lowering.val(*v).shape;
  if (sq.size() < 2 || sk.size() != sq.size() || sv.size() != sq.size())
    return std::unexpected("attention operands of different ranks or fewer than 2 dims");
  if (!std::equal(sq.begin(), sq.end() - 2, sk.begin()) || !std::equal(sq.begin(), sq.end() - 2, sv.begin()))
    return std::unexpected("attention operands whose batch dims differ");
  const double scale =
      args.at("scale").is_null() ? 1.0 / std::sqrt(static_cast<double>(sq.back())) : args.at("scale").get<double>();
  const size_t rank = sq.size();
  auto scores = gemm(lowering, *q, *k, true, scale, sq, sk, {sq[rank - 2], sk[rank - 2]});
  if (!scores) return std::unexpected(scores.error());
  int logits = *scores;
  if (*mask >= 0) {
    auto masked = lowering.pointwise("($0 + $1)", {logits, *mask});
    if (!masked) return std::unexpected(masked.error());
    if (lowering.val(*masked).shape != lowering.val(logits).shape)
      return std::unexpected("attention mask broadcasts the scores");
    logits = *masked;
  }
  if (args.at("is_causal").get<bool>()) {
    const std::string row = "c" + std::to_string(rank - 2), col = "c" + std::to_string(rank - 1);
    auto causal = lowering.pointwise("(" + col + " <= " + row + " ? $0 : -INFINITY)", {logits});
    if (!causal) return std::unexpected(causal.error());
    logits = *causal;
  }
  const int probs = softmax_step(lowering, logits, static_cast<int>(rank) - 1, "softmax");
  auto out = gemm(lowering, probs, *v, false, 1, lowering.val(probs).shape, sv, {sq[rank - 2], sv.back()});
  if (!out) return std::unexpected(out.error());
  lowering.bind(node.outputs[0], *out);
  return {};
}

}  // namespace

void register_matmul_ops(std::map<std::string, OpEntry>& t) {
  t["aten::einsum"] = {"aten::einsum(str equation, Tensor[] tensors, *, int[]? path=None) -> Tensor", einsum};
  t["aten::matmul"] = {"aten::matmul(Tensor self, Tensor other) -> Tensor", matmul};
  // mv, dot and 1-d inner are matmul's 2-d @ 1-d and 1-d @ 1-d cases.
  for (const auto& [name, second] : {std::pair{"mv", "vec"}, std::pair{"dot", "tensor"}, std::pair{"inner", "other"}}) {
    std::string second_name = second;
    size_t first_rank = std::string(name) == "mv" ? 2 : 1;
    t["aten::" + std::string(name)] = {
        "aten::" + std::string(name) + "(Tensor self, Tensor " + second_name + ") -> Tensor",
        [second_name, first_rank](Lowering& lowering, const Json& args, const Node& node) -> Result {
          auto a = lowering.tensor(args.at("self"));
          auto b = lowering.tensor(args.at(second_name));
          if (!a || !b) return std::unexpected(!a ? a.error() : b.error());
          if (lowering.val(*a).shape.size() != first_rank || lowering.val(*b).shape.size() != 1) {
            return std::unexpected("operands of other ranks than " + std::to_string(first_rank) + "-d and 1-d");
          }
          Json renamed = {{"self", args.at("self")}, {"other", args.at(second_name)}};
          return matmul(lowering, renamed, node);
        }};
  }
  // outer product: a as a column times b, broadcast.
  for (const std::string name : {"outer", "ger"}) {
    t["aten::" + name] = {"aten::" + name + "(Tensor self, Tensor vec2) -> Tensor",
                          [](Lowering& lowering, const Json& args, const Node& node) -> Result {
                            auto a = lowering.tensor(args.at("self"));
                            auto b = lowering.tensor(args.at("vec2"));
                            if (!a || !b) return std::unexpected(!a ? a.error() : b.error());
                            if (lowering.val(*a).shape.size() != 1 || lowering.val(*b).shape.size() != 1)
                              return std::unexpected("outer of tensors that are not 1-d");
                            Val column;
                            column.kind = ValKind::alias;
                            column.shape = {lowering.val(*a).shape[0], 1};
                            column.args = {*a};
                            int column_id = lowering.add(std::move(column));
                            auto out = lowering.pointwise("($0 * $1)", {column_id, *b});
                            if (!out) return std::unexpected(out.error());
                            lowering.bind(node.outputs[0], *out);
                            return {};
                          }};
  }
  t["aten::linear"] = {"aten::linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor",
                       [](Lowering& lowering, const Json& args, const Node& node) -> Result {
                         auto x = lowering.tensor(args.at("input"));
                         auto w = lowering.tensor(args.at("weight"));
                         auto bias = lowering.optional_tensor(args.at("bias"));
                         if (!x || !w || !bias) return std::unexpected(!x ? x.error() : !w ? w.error() : bias.error());
                         std::vector<int64_t> sx = lowering.val(*x).shape, sw = lowering.val(*w).shape;
                         if (sx.empty() || sw.empty() || sw.size() > 2)
                           return std::unexpected("linear with a weight that is not 1-d or 2-d");
                         std::vector<int64_t> tail(sx.begin(), sx.end() - 1);
                         const std::vector<int64_t> rows = {product(sx, 0, sx.size() - 1), sx.back()};
                         // A 1-d weight [K] is one output feature whose dim is dropped: x @ w, as matmul takes a
                         // vector.
                         if (sw.size() == 1 && sx.size() < 2)
                           return std::unexpected("linear of a 1-d input and a 1-d weight");
                         if (sw.size() == 2) tail.push_back(sw[0]);
                         auto out = sw.size() == 2 ? gemm(lowering, *x, *w, true, 1, rows, sw, tail)
                                                   : gemm(lowering, *x, *w, false, 1, rows, {sw[0], 1}, tail);
                         if (!out) return std::unexpected(out.error());
                         return bind_plus(lowering, node, *out, *bias, 1);
                       }};
  t["aten::scaled_dot_product_attention"] = {
      "aten::scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None, float "
      "dropout_p=0., bool is_causal=False, *, float? scale=None, bool enable_gqa=False) -> Tensor",
      attention};
  t["aten::mm"] = {"aten::mm(Tensor self, Tensor mat2) -> Tensor",
                   [](Lowering& lowering, const Json& args, const Node& node) -> Result {
                     auto a = lowering.tensor(args.at("self"));
                     auto b = lowering.tensor(args.at("mat2"));
                     if (!a || !b) return std::unexpected(!a ? a.error() : b.error());
                     std::vector<int64_t> sa = lowering.val(*a).shape, sb = lowering.val(*b).shape;
                     if (sa.size() != 2 || sb.size() != 2) return std::unexpected("mm of tensors that are not 2-d");
                     auto out = gemm(lowering, *a, *b, false, 1, sa, sb, {sa[0], sb[1]});
                     if (!out) return std::unexpected(out.error());
                     lowering.bind(node.outputs[0], *out);
                     return {};
                   }};
  t["aten::bmm"] = {"aten::bmm(Tensor self, Tensor mat2) -> Tensor",
                    [](Lowering& lowering, const Json& args, const Node& node) -> Result {
                      auto a = lowering.tensor(args.at("self"));
                      auto b = lowering.tensor(args.at("mat2"));
                      if (!a || !b) return std::unexpected(!a ? a.error() : b.error());
                      std::vector<int64_t> sa = lowering.val(*a).shape, sb = lowering.val(*b).shape;
                      if (sa.size() != 3 || sb.size() != 3 || sa[0] != sb[0]) return std::unexpected("bmm shapes");
                      auto out = gemm(lowering, *a, *b, false, 1, sa, sb, {sa[1], sb[2]});
                      if (!out) return std::unexpected(out.error());
                      lowering.bind(node.outputs[0], *out);
                      return {};
                    }};
  auto plus_gemm = [](const std::string& first, const std::string& second, size_t rank) -> OpHandler {
    return [=](Lowering& lowering, const Json& args, const Node& node) -> Result {
      auto c = lowering.tensor(args.at("self"));
      auto a = lowering.tensor(args.at(first));
      auto b = lowering.tensor(args.at(second));
      if (!a || !b || !c) return std::unexpected(!a ? a.error() : !b ? b.error() : c.error());
      auto alpha = number(args, "alpha");
      auto beta = number(args, "beta");
      if (!alpha || !beta) return std::unexpected(!alpha ? alpha.error() : beta.error());
      std::vector<int64_t> sa = lowering.val(*a).shape, sb = lowering.val(*b).shape;
      if (sa.size() != rank || sb.size() != rank) return std::unexpected("operand ranks");
      std::vector<int64_t> tail = {sa[rank - 2], sb[rank - 1]};
      auto out = gemm(lowering, *a, *b, false, *alpha, sa, sb, tail);
      if (!out) return std::unexpected(out.error());
      return bind_plus(lowering, node, *out, *c, *beta);
    };
  };
  t["aten::addmv"] = {"aten::addmv(Tensor self, Tensor mat, Tensor vec, *, Scalar beta=1, Scalar alpha=1) -> Tensor",
                      [](Lowering& lowering, const Json& args, const Node& node) -> Result {
                        auto c = lowering.tensor(args.at("self"));
                        auto a = lowering.tensor(args.at("mat"));
                        auto b = lowering.tensor(args.at("vec"));
                        auto alpha = number(args, "alpha");
                        auto beta = number(args, "beta");
                        if (!a || !b || !c || !alpha || !beta) return std::unexpected("addmv arguments");
                        std::vector<int64_t> sa = lowering.val(*a).shape, sb = lowering.val(*b).shape;
                        if (sa.size() != 2 || sb.size() != 1)
                          return std::unexpected("addmv of other ranks than 2-d and 1-d");
                        auto out = gemm(lowering, *a, *b, false, *alpha, sa, {sb[0], 1}, {sa[0]});
                        if (!out) return std::unexpected(out.error());
                        return bind_plus(lowering, node, *out, *c, *beta);
                      }};
  t["aten::addmm"] = {"aten::addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor",
                      plus_gemm("mat1", "mat2", 2)};
  t["aten::baddbmm"] = {
      "aten::baddbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> Tensor",
      plus_gemm("batch1", "batch2", 3)};
}

}  // namespace ca::builtin
