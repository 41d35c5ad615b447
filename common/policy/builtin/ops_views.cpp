// Views: reshapes keep the element order (an alias read at the same linear index); transpose and permute reorder
// (read through index math). Neither copies unless its result is an output.
#include <algorithm>

#include "policy/builtin/emit_util.h"
#include "policy/builtin/ops_util.h"

namespace ca::builtin {
namespace {

using Result = std::expected<void, std::string>;

Result bind_alias(Lowering& lowering, const Node& node, int src, std::vector<int64_t> shape) {
  if (product(shape, 0, shape.size()) != lowering.val(src).numel())
    return std::unexpected("reshape changes the element count");
  Val val;
  val.kind = ValKind::alias;
  val.shape = std::move(shape);
  val.args = {src};
  lowering.bind(node.outputs[0], lowering.add(std::move(val)));
  return {};
}

// view/reshape sizes with one -1 inferred.
std::expected<std::vector<int64_t>, std::string> infer_sizes(std::vector<int64_t> sizes, int64_t numel) {
  int64_t known = 1;
  int infer = -1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == -1 && infer < 0) {
      infer = static_cast<int>(i);
      continue;
    }
    if (sizes[i] < 0) return std::unexpected("bad size in view");
    known *= sizes[i];
  }
  if (infer >= 0) {
    if (known == 0) return std::unexpected("cannot infer a -1 size next to a 0 size");
    sizes[infer] = numel / known;
  }
  return sizes;
}

OpHandler reshape_handler(const std::string& size_name) {
  return [size_name](Lowering& lowering, const Json& args, const Node& node) -> Result {
    auto self = lowering.tensor(args.at("self"));
    if (!self) return std::unexpected(self.error());
    auto sizes = int_list(args, size_name);
    if (!sizes) return std::unexpected(sizes.error());
    auto shape = infer_sizes(*sizes, lowering.val(*self).numel());
    if (!shape) return std::unexpected(shape.error());
    return bind_alias(lowering, node, *self, *shape);
  };
}

Result same_shape(Lowering& lowering, const Json& args, const Node& node) {
  auto self = lowering.tensor(args.at("self"));
  if (!self) return std::unexpected(self.error());
  return bind_alias(lowering, node, *self, lowering.val(*self).shape);
}

Result permuted(Lowering& lowering, const Node& node, int src, const std::vector<int>& perm) {
  lowering.bind(node.outputs[0], permute_view(lowering, src, perm));
  return {};
}

// A view that reads args[0] through explicit strides: output dim d walks input dim perm[d] by step[d], from `offset`.
Result stepped(Lowering& lowering, const Node& node, int src, Val view) {
  view.kind = ValKind::permute;
  view.args = {src};
  lowering.bind(node.outputs[0], lowering.add(std::move(view)));
  return {};
}

// The identity view of a tensor of `shape`, which flip, slice and select then change.
Val identity_view(const std::vector<int64_t>& shape) {
  Val view;
  view.shape = shape;
  for (size_t d = 0; d < shape.size(); ++d) view.perm.push_back(static_cast<int>(d));
  view.step.assign(shape.size(), 1);
  return view;
}

// Elements [start, start + size) of `src` along `dim`, a view.
int slice_of(Lowering& lowering, int src, int dim, int64_t start, int64_t size) {
  const std::vector<int64_t> shape = lowering.val(src).shape;
  Val view = identity_view(shape);
  view.kind = ValKind::permute;
  view.args = {src};
  view.shape[dim] = size;
  view.offset = start * contiguous_strides(shape)[dim];
  return lowering.add(std::move(view));
}

// cumulative_trapezoid as ATen computes it: cumsum((y[1:] + y[:-1]) * dx) / 2 along `dim`, dx the scalar spacing or
// x's differences (x 1-d along dim, or of y's rank after leading 1s).
Result trapezoid(Lowering& lowering, const Json& args, const Node& node, bool with_x) {
  auto y = lowering.tensor(args.at("y"));
  if (!y) return std::unexpected(y.error());
  const std::vector<int64_t> shape = lowering.val(*y).shape;
  auto dim = wrap_dim(args.at("dim").get<int64_t>(), shape.size());
  if (!dim) return std::unexpected(dim.error());
  if (shape.empty() || shape[*dim] < 2) return std::unexpected("cumulative_trapezoid over fewer than 2 points");
  const int64_t n = shape[*dim];
  const int left = slice_of(lowering, *y, *dim, 0, n - 1), right = slice_of(lowering, *y, *dim, 1, n - 1);
  std::expected<int, std::string> sum;
  if (with_x) {
    auto x = lowering.tensor(args.at("x"));
    if (!x) return std::unexpected(x.error());
    std::vector<int64_t> x_shape = lowering.val(*x).shape;
    if (x_shape.size() == 1 && shape.size() > 1) {
      if (x_shape[0] != n) return std::unexpected("x of another length than y along dim");
      x_shape.assign(shape.size(), 1);
      x_shape[*dim] = n;
    }
    if (x_shape.size() > shape.size()) return std::unexpected("x of a higher rank than y");
    x_shape.insert(x_shape.begin(), shape.size() - x_shape.size(), 1);
    if (x_shape[*dim] != n) return std::unexpected("x of another length than y along dim");
    Val alias;
    alias.kind = ValKind::alias;
    alias.shape = x_shape;
    alias.args = {*x};
    const int viewed = lowering.add(std::move(alias));
    const int x_left = slice_of(lowering, viewed, *dim, 0, n - 1), x_right = slice_of(lowering, viewed, *dim, 1, n - 1);
    sum = lowering.pointwise("(($0 + $1) * ($2 - $3))", {left, right, x_right, x_left});
  } else {
    auto dx = number(args, "dx");
    if (!dx) return std::unexpected(dx.error());
    sum = lowering.pointwise("(" + float_literal(*dx / 2) + " * ($0 + $1))", {left, right});
  }
  if (!sum) return std::unexpected(sum.error());
  if (lowering.val(*sum).shape.size() != shape.size()) return std::unexpected("x and y do not broadcast");
  auto scanned = scan_val(lowering, *sum, *dim, "cumsum");
  if (!scanned) return std::unexpected(scanned.error());
  auto out = with_x ? lowering.pointwise("($0 / 2.f)", {*scanned}) : scanned;
  if (!out) return std::unexpected(out.error());
  lowering.bind(node.outputs[0], *out);
  return {};
}

Result transposed(Lowering& lowering, const Node& node, int self, int64_t dim0, int64_t dim1) {
  size_t rank = lowering.val(self).shape.size();
  if (rank < 2) {
    Val val = lowering.val(self);
    return bind_alias(lowering, node, self, val.shape);
  }
  auto d0 = wrap_dim(dim0, rank);
  auto d1 = wrap_dim(dim1, rank);
  if (!d0 || !d1) return std::unexpected(!d0 ? d0.error() : d1.error());
  std::vector<int> perm(rank);
  for (size_t i = 0; i < rank; ++i) perm[i] = static_cast<int>(i);
  std::swap(perm[*d0], perm[*d1]);
  return permuted(lowering, node, self, perm);
}

// Swaps the last two dims (mT, adjoint of a real tensor; t of a matrix).
OpHandler last_two_swapped(size_t max_rank) {
  return [max_rank](Lowering& lowering, const Json& args, const Node& node) -> Result {
    auto self = lowering.tensor(args.at("self"));
    if (!self) return std::unexpected(self.error());
    if (lowering.val(*self).shape.size() > max_rank) return std::unexpected("t() of a tensor with more than 2 dims");
    return transposed(lowering, node, *self, -2, -1);
  };
}

// expand: size-1 dims (and new leading dims) repeated, read through broadcasting.
Result expanded(Lowering& lowering, const Node& node, int self, const std::vector<int64_t>& sizes) {
  const std::vector<int64_t>& shape = lowering.val(self).shape;
  if (sizes.size() < shape.size()) return std::unexpected("expand to fewer dims");
  Val val;
  val.kind = ValKind::pointwise;
  val.expr = "$0";
  val.args = {self};
  val.align = {-1};
  size_t lead = sizes.size() - shape.size();
  for (size_t d = 0; d < sizes.size(); ++d) {
    int64_t have = d < lead ? 1 : shape[d - lead];
    int64_t want = sizes[d] == -1 ? have : sizes[d];
    if (have != want && have != 1) return std::unexpected("expand of a dim that is not 1");
    val.shape.push_back(want);
  }
  lowering.bind(node.outputs[0], lowering.add(std::move(val)));
  return {};
}

// The values of a Tensor[] argument.
std::expected<std::vector<int>, std::string> tensor_list(Lowering& lowering, const Json& list) {
  if (!list.is_array()) return std::unexpected("expected a list of tensors, got " + list.dump());
  std::vector<int> values;
  for (const Json& item : list) {
    auto value = lowering.tensor(item);
    if (!value) return std::unexpected(value.error());
    values.push_back(*value);
  }
  return values;
}

// cat: the parts one after another along `dim`, each read where its coordinates fall. Parts of size 0 along it add
// nothing, and a 1-d empty tensor is skipped whatever its rank (as torch.cat does).
Result concatenated(Lowering& lowering, const Node& node, const std::vector<int>& parts, int64_t dim) {
  std::vector<int> kept;
  for (int part : parts) {
    if (lowering.val(part).numel() > 0) kept.push_back(part);
  }
  if (kept.empty()) return std::unexpected("cat of empty tensors only");
  const std::vector<int64_t> first = lowering.val(kept[0]).shape;
  auto axis = wrap_dim(dim, first.size());
  if (!axis) return std::unexpected(axis.error());
  Val val;
  val.kind = ValKind::concat;
  val.shape = first;
  val.shape[*axis] = 0;
  val.cat_dim = *axis;
  for (int part : kept) {
    std::vector<int64_t> shape = lowering.val(part).shape;
    if (shape.size() != first.size()) return std::unexpected("cat of tensors of different ranks");
    val.shape[*axis] += shape[*axis];
    shape[*axis] = first[*axis];
    if (shape != first) return std::unexpected("cat of tensors whose sizes differ off the joined dim");
  }
  if (kept.size() == 1) return bind_alias(lowering, node, kept[0], first);
  val.args = std::move(kept);
  lowering.bind(node.outputs[0], lowering.add(std::move(val)));
  return {};
}

// flip: per flipped dim a step of -1 from its far end.
Result flipped(Lowering& lowering, const Json& args, const Node& node, const std::vector<int64_t>& dims) {
  auto self = lowering.tensor(args.at("self"));
  if (!self) return std::unexpected(self.error());
  const std::vector<int64_t> shape = lowering.val(*self).shape;
  const std::vector<int64_t> strides = contiguous_strides(shape);
  Val view = identity_view(shape);
  for (int64_t d : dims) {
    auto dim = wrap_dim(d, shape.size());
    if (!dim) return std::unexpected(dim.error());
    if (view.step[*dim] < 0) return std::unexpected("flip names a dim twice");
    view.step[*dim] = -1;
    view.offset += std::max<int64_t>(shape[*dim] - 1, 0) * strides[*dim];
  }
  return stepped(lowering, node, *self, std::move(view));
}

// slice with Python's rules: None is the whole dim, negative bounds count from the end, bounds clamp.
Result sliced(Lowering& lowering, const Json& args, const Node& node, const Json& start_arg, const Json& end_arg,
              int64_t step) {
  auto self = lowering.tensor(args.at("self"));
  if (!self) return std::unexpected(self.error());
  const std::vector<int64_t> shape = lowering.val(*self).shape;
  auto dim = wrap_dim(args.at("dim").get<int64_t>(), shape.size());
  if (!dim) return std::unexpected(dim.error());
  const int64_t size = shape[*dim];
  if (step <= 0) return std::unexpected("slice step must be positive");
  auto bound = [&](const Json& value, int64_t none) {
    int64_t at = value.is_null() ? none : value.get<int64_t>();
    if (at < 0) at += size;
    return std::clamp<int64_t>(at, 0, size);
  };
  const int64_t start = bound(start_arg, 0);
  const int64_t end = std::max(bound(end_arg, size), start);
  Val view = identity_view(shape);
  view.shape[*dim] = (end - start + step - 1) / step;
  view.step[*dim] = step;
  view.offset = start * contiguous_strides(shape)[*dim];
  return stepped(lowering, node, *self, std::move(view));
}

// atleast_1d/2d/3d's shape: a 0-d tensor becomes [1], [1, 1] or [1, 1, 1]; a 1-d [n] becomes [1, n] or [1, n, 1]; a
// 2-d [m, n] becomes [m, n, 1].
std::vector<int64_t> at_least(std::vector<int64_t> shape, size_t rank) {
  if (shape.size() >= rank) return shape;
  if (shape.empty()) return std::vector<int64_t>(rank, 1);
  if (shape.size() == 1) shape.insert(shape.begin(), 1);
  while (shape.size() < rank) shape.push_back(1);
  return shape;
}

// The parts of a Tensor[] argument reshaped by `shape_of` (an alias each where the shape changes).
std::expected<std::vector<int>, std::string> reshaped_parts(
    Lowering& lowering, const Json& list, const std::function<std::vector<int64_t>(std::vector<int64_t>)>& shape_of) {
  auto parts = tensor_list(lowering, list);
  if (!parts) return parts;
  for (int& part : *parts) {
    std::vector<int64_t> shape = shape_of(lowering.val(part).shape);
    if (shape == lowering.val(part).shape) continue;
    Val view;
    view.kind = ValKind::alias;
    view.shape = std::move(shape);
    view.args = {part};
    part = lowering.add(std::move(view));
  }
  return parts;
}

// hstack, vstack/row_stack, dstack and column_stack: each part brought to a rank, then joined along a dim.
OpEntry stack_like(const std::string& name, size_t rank, int64_t dim) {
  return {"aten::" + name + "(Tensor[] tensors) -> Tensor",
          [name, rank, dim](Lowering& lowering, const Json& args, const Node& node) -> Result {
            auto shape_of = [&](std::vector<int64_t> shape) {
              if (name == "column_stack" && shape.size() <= 1) return std::vector<int64_t>{product(shape, 0, 1), 1};
              return at_least(std::move(shape), rank);
            };
            auto parts = reshaped_parts(lowering, args.at("tensors"), shape_of);
            if (!parts) return std::unexpected(parts.error());
            if (parts->empty()) return std::unexpected(name + " of no tensors");
            // hstack joins 1-d parts along dim 0 and all others along dim 1.
            const bool one_d = name == "hstack" && lowering.val(parts->front()).shape.size() == 1;
            return concatenated(lowering, node, *parts, one_d ? 0 : dim);
          }};
}

}  // namespace

void register_view_ops(std::map<std::string, OpEntry>& t) {
  t["aten::view"] = {"aten::view(Tensor(a) self, SymInt[] size) -> Tensor(a)", reshape_handler("size")};
  t["aten::reshape"] = {"aten::reshape(Tensor(a) self, SymInt[] shape) -> Tensor(a)", reshape_handler("shape")};
  t["aten::contiguous"] = {"aten::contiguous(Tensor(a) self, *, MemoryFormat memory_format=0) -> Tensor(a)",
                           same_shape};
  t["aten::clone"] = {"aten::clone(Tensor self, *, MemoryFormat? memory_format=None) -> Tensor", same_shape};
  t["aten::flatten.using_ints"] = {
      "aten::flatten.using_ints(Tensor(a) self, int start_dim=0, int end_dim=-1) -> Tensor(a)",
      [](Lowering& lowering, const Json& args, const Node& node) -> Result {
        auto self = lowering.tensor(args.at("self"));
        if (!self) return std::unexpected(self.error());
        const std::vector<int64_t>& shape = lowering.val(*self).shape;
        if (shape.empty()) return bind_alias(lowering, node, *self, {1});
        auto start = wrap_dim(args.at("start_dim").get<int64_t>(), shape.size());
        auto end = wrap_dim(args.at("end_dim").get<int64_t>(), shape.size());
        if (!start || !end) return std::unexpected(!start ? start.error() : end.error());
        if (*start > *end) return std::unexpected("flatten start_dim after end_dim");
        std::vector<int64_t> out(shape.begin(), shape.begin() + *start);
        out.push_back(product(shape, *start, *end + 1));
        out.insert(out.end(), shape.begin() + *end + 1, shape.end());
        return bind_alias(lowering, node, *self, out);
      }};
  t["aten::unsqueeze"] = {"aten::unsqueeze(Tensor(a) self, int dim) -> Tensor(a)",
                          [](Lowering& lowering, const Json& args, const Node& node) -> Result {
                            auto self = lowering.tensor(args.at("self"));
                            if (!self) return std::unexpected(self.error());
                            std::vector<int64_t> shape = lowering.val(*self).shape;
                            auto dim = wrap_dim(args.at("dim").get<int64_t>(), shape.size() + 1);
                            if (!dim) return std::unexpected(dim.error());
                            shape.insert(shape.begin() + *dim, 1);
                            return bind_alias(lowering, node, *self, shape);
                          }};
  auto squeeze = [](Lowering& lowering, const Json& args, const Node& node, std::vector<int64_t> dims) -> Result {
    auto self = lowering.tensor(args.at("self"));
    if (!self) return std::unexpected(self.error());
    const std::vector<int64_t>& shape = lowering.val(*self).shape;
    std::vector<bool> drop(shape.size(), dims.empty());
    for (int64_t d : dims) {
      auto dim = wrap_dim(d, shape.size());
      if (!dim) return std::unexpected(dim.error());
      if (!shape.empty()) drop[*dim] = true;
    }
    std::vector<int64_t> out;
    for (size_t i = 0; i < shape.size(); ++i) {
      if (!(drop[i] && shape[i] == 1)) out.push_back(shape[i]);
    }
    return bind_alias(lowering, node, *self, out);
  };
  t["aten::squeeze"] = {
      "aten::squeeze(Tensor(a) self) -> Tensor(a)",
      [squeeze](Lowering& l, const Json& args, const Node& node) { return squeeze(l, args, node, {}); }};
  t["aten::squeeze.dim"] = {"aten::squeeze.dim(Tensor(a) self, int dim) -> Tensor(a)",
                            [squeeze](Lowering& l, const Json& args, const Node& node) {
                              return squeeze(l, args, node, {args.at("dim").get<int64_t>()});
                            }};
  t["aten::squeeze.dims"] = {"aten::squeeze.dims(Tensor(a) self, int[] dim) -> Tensor(a)",
                             [squeeze](Lowering& l, const Json& args, const Node& node) -> Result {
                               auto dims = int_list(args, "dim");
                               if (!dims) return std::unexpected(dims.error());
                               if (dims->empty()) return same_shape(l, args, node);
                               return squeeze(l, args, node, *dims);
                             }};
  t["aten::transpose.int"] = {"aten::transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)",
                              [](Lowering& lowering, const Json& args, const Node& node) -> Result {
                                auto self = lowering.tensor(args.at("self"));
                                if (!self) return std::unexpected(self.error());
                                size_t rank = lowering.val(*self).shape.size();
                                auto d0 = wrap_dim(args.at("dim0").get<int64_t>(), rank);
                                auto d1 = wrap_dim(args.at("dim1").get<int64_t>(), rank);
                                if (!d0 || !d1) return std::unexpected(!d0 ? d0.error() : d1.error());
                                if (rank == 0) return same_shape(lowering, args, node);
                                std::vector<int> perm(rank);
                                for (size_t i = 0; i < rank; ++i) perm[i] = static_cast<int>(i);
                                std::swap(perm[*d0], perm[*d1]);
                                return permuted(lowering, node, *self, perm);
                              }};
  t["aten::swapaxes"] = {"aten::swapaxes(Tensor(a) self, int axis0, int axis1) -> Tensor(a)",
                         [](Lowering& lowering, const Json& args, const Node& node) -> Result {
                           auto self = lowering.tensor(args.at("self"));
                           if (!self) return std::unexpected(self.error());
                           return transposed(lowering, node, *self, args.at("axis0").get<int64_t>(),
                                             args.at("axis1").get<int64_t>());
                         }};
  t["aten::t"] = {"aten::t(Tensor(a) self) -> Tensor(a)", last_two_swapped(2)};
  t["aten::mT"] = {"aten::mT(Tensor(a) self) -> Tensor(a)", last_two_swapped(64)};
  t["aten::adjoint"] = {"aten::adjoint(Tensor(a) self) -> Tensor(a)", last_two_swapped(64)};
  t["aten::numpy_T"] = {"aten::numpy_T(Tensor(a) self) -> Tensor(a)",
                        [](Lowering& lowering, const Json& args, const Node& node) -> Result {
                          auto self = lowering.tensor(args.at("self"));
                          if (!self) return std::unexpected(self.error());
                          std::vector<int> perm;
                          for (size_t d = lowering.val(*self).shape.size(); d-- > 0;)
                            perm.push_back(static_cast<int>(d));
                          return permuted(lowering, node, *self, perm);
                        }};
  for (const std::string name : {"movedim", "moveaxis"}) {
    t["aten::" + name + ".int"] = {"aten::" + name + ".int(Tensor(a) self, int source, int destination) -> Tensor(a)",
                                   [](Lowering& lowering, const Json& args, const Node& node) -> Result {
                                     auto self = lowering.tensor(args.at("self"));
                                     if (!self) return std::unexpected(self.error());
                                     size_t rank = lowering.val(*self).shape.size();
                                     auto from = wrap_dim(args.at("source").get<int64_t>(), rank);
                                     auto to = wrap_dim(args.at("destination").get<int64_t>(), rank);
                                     if (!from || !to) return std::unexpected(!from ? from.error() : to.error());
                                     std::vector<int> perm;
                                     for (size_t d = 0; d < rank; ++d) {
                                       if (static_cast<int>(d) != *from) perm.push_back(static_cast<int>(d));
                                     }
                                     perm.insert(perm.begin() + *to, *from);
                                     return permuted(lowering, node, *self, perm);
                                   }};
  }
  t["aten::expand"] = {"aten::expand(Tensor(a) self, SymInt[] size, *, bool implicit=False) -> Tensor(a)",
                       [](Lowering& lowering, const Json& args, const Node& node) -> Result {
                         auto self = lowering.tensor(args.at("self"));
                         auto sizes = int_list(args, "size");
                         if (!self || !sizes) return std::unexpected(!self ? self.error() : sizes.error());
                         return expanded(lowering, node, *self, *sizes);
                       }};
  t["aten::expand_copy"] = t["aten::expand"];
  t["aten::expand_copy"].schema = "aten::expand_copy(Tensor self, SymInt[] size, *, bool implicit=False) -> Tensor";
  t["aten::expand_as"] = {"aten::expand_as(Tensor(a) self, Tensor other) -> Tensor(a)",
                          [](Lowering& lowering, const Json& args, const Node& node) -> Result {
                            auto self = lowering.tensor(args.at("self"));
                            auto other = lowering.tensor(args.at("other"));
                            if (!self || !other) return std::unexpected(!self ? self.error() : other.error());
                            return expanded(lowering, node, *self, lowering.val(*other).shape);
                          }};
  // glu: the first half along dim times the sigmoid of the second, both read as slices.
  t["aten::glu"] = {"aten::glu(Tensor self, int dim=-1) -> Tensor",
                    [](Lowering& lowering, const Json& args, const Node& node) -> Result {
                      auto self = lowering.tensor(args.at("self"));
                      if (!self) return std::unexpected(self.error());
                      const std::vector<int64_t> shape = lowering.val(*self).shape;
                      auto dim = wrap_dim(args.at("dim").get<int64_t>(), shape.size());
                      if (!dim || shape.empty() || shape[*dim] % 2 != 0)
                        return std::unexpected("glu needs an even dim");
                      const std::vector<int64_t> strides = contiguous_strides(shape);
                      int halves[2];
                      for (int h = 0; h < 2; ++h) {
                        Val half;
                        half.kind = ValKind::permute;
                        half.args = {*self};
                        half.shape = shape;
                        half.shape[*dim] /= 2;
                        for (size_t d = 0; d < shape.size(); ++d) half.perm.push_back(static_cast<int>(d));
                        half.offset = h * half.shape[*dim] * strides[*dim];
                        halves[h] = lowering.add(std::move(half));
                      }
                      auto out = lowering.pointwise("($0 / (1.f + expf(-$1)))", {halves[0], halves[1]});
                      if (!out) return std::unexpected(out.error());
                      lowering.bind(node.outputs[0], *out);
                      return {};
                    }};
  t["aten::flip"] = {"aten::flip(Tensor self, int[] dims) -> Tensor",
                     [](Lowering& lowering, const Json& args, const Node& node) -> Result {
                       auto dims = int_list(args, "dims");
                       if (!dims) return std::unexpected(dims.error());
                       return flipped(lowering, args, node, *dims);
                     }};
  t["aten::flipud"] = {"aten::flipud(Tensor self) -> Tensor",
                       [](Lowering& lowering, const Json& args, const Node& node) -> Result {
                         return flipped(lowering, args, node, {0});
                       }};
  t["aten::fliplr"] = {"aten::fliplr(Tensor self) -> Tensor",
                       [](Lowering& lowering, const Json& args, const Node& node) -> Result {
                         return flipped(lowering, args, node, {1});
                       }};
  t["aten::slice.Tensor"] = {
      "aten::slice.Tensor(Tensor(a) self, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1) -> Tensor(a)",
      [](Lowering& lowering, const Json& args, const Node& node) -> Result {
        return sliced(lowering, args, node, args.at("start"), args.at("end"), args.at("step").get<int64_t>());
      }};
  // narrow(dim, start, length) is slice(dim, start, start + length) where start is wrapped first.
  t["aten::narrow"] = {"aten::narrow(Tensor(a) self, int dim, SymInt start, SymInt length) -> Tensor(a)",
                       [](Lowering& lowering, const Json& args, const Node& node) -> Result {
                         int64_t start = args.at("start").get<int64_t>();
                         const int64_t length = args.at("length").get<int64_t>();
                         if (start < 0) {
                           auto self = lowering.tensor(args.at("self"));
                           if (!self) return std::unexpected(self.error());
                           auto dim = wrap_dim(args.at("dim").get<int64_t>(), lowering.val(*self).shape.size());
                           if (!dim) return std::unexpected(dim.error());
                           start += lowering.val(*self).shape[*dim];
                         }
                         if (start < 0 || length < 0) return std::unexpected("narrow out of range");
                         return sliced(lowering, args, node, Json(start), Json(start + length), 1);
                       }};
  t["aten::select.int"] = {"aten::select.int(Tensor(a) self, int dim, SymInt index) -> Tensor(a)",
                           [](Lowering& lowering, const Json& args, const Node& node) -> Result {
                             auto self = lowering.tensor(args.at("self"));
                             if (!self) return std::unexpected(self.error());
                             const std::vector<int64_t> shape = lowering.val(*self).shape;
                             auto dim = wrap_dim(args.at("dim").get<int64_t>(), shape.size());
                             if (!dim) return std::unexpected(dim.error());
                             int64_t index = args.at("index").get<int64_t>();
                             if (index < 0) index += shape[*dim];
                             if (index < 0 || index >= shape[*dim]) return std::unexpected("select index out of range");
                             Val view = identity_view(shape);
                             view.shape.erase(view.shape.begin() + *dim);
                             view.perm.erase(view.perm.begin() + *dim);
                             view.step.erase(view.step.begin() + *dim);
                             view.offset = index * contiguous_strides(shape)[*dim];
                             return stepped(lowering, node, *self, std::move(view));
                           }};
  for (const std::string name : {"cat", "concat", "concatenate"}) {
    t["aten::" + name] = {"aten::" + name + "(Tensor[] tensors, int dim=0) -> Tensor",
                          [](Lowering& lowering, const Json& args, const Node& node) -> Result {
                            auto parts = tensor_list(lowering, args.at("tensors"));
                            if (!parts) return std::unexpected(parts.error());
                            return concatenated(lowering, node, *parts, args.at("dim").get<int64_t>());
                          }};
  }
  // stack: each part given a size-1 dim at `dim` (an alias), then joined along it.
  // Each tensor read at the shape they broadcast to (a pointwise read of itself, shaped by the others).
  t["aten::broadcast_tensors"] = {"aten::broadcast_tensors(Tensor[] tensors) -> Tensor[]",
                                  [](Lowering& lowering, const Json& args, const Node& node) -> Result {
                                    auto parts = tensor_list(lowering, args.at("tensors"));
                                    if (!parts) return std::unexpected(parts.error());
                                    for (size_t i = 0; i < parts->size(); ++i) {
                                      std::vector<int> operands = *parts;
                                      std::swap(operands[0], operands[i]);
                                      auto wide = lowering.pointwise("$0", operands);
                                      if (!wide) return std::unexpected(wide.error());
                                      const bool same = lowering.val(*wide).shape == lowering.val((*parts)[i]).shape;
                                      lowering.bind(node.outputs[0] + "[" + std::to_string(i) + "]",
                                                    same ? (*parts)[i] : *wide);
                                    }
                                    return {};
                                  }};
  t["aten::cumulative_trapezoid.x"] = {
      "aten::cumulative_trapezoid.x(Tensor y, Tensor x, *, int dim=-1) -> Tensor",
      [](Lowering& lowering, const Json& args, const Node& node) { return trapezoid(lowering, args, node, true); }};
  t["aten::cumulative_trapezoid.dx"] = {
      "aten::cumulative_trapezoid.dx(Tensor y, *, Scalar dx=1, int dim=-1) -> Tensor",
      [](Lowering& lowering, const Json& args, const Node& node) { return trapezoid(lowering, args, node, false); }};
  t["aten::stack"] = {"aten::stack(Tensor[] tensors, int dim=0) -> Tensor",
                      [](Lowering& lowering, const Json& args, const Node& node) -> Result {
                        auto parts = tensor_list(lowering, args.at("tensors"));
                        if (!parts) return std::unexpected(parts.error());
                        if (parts->empty()) return std::unexpected("stack of no tensors");
                        const std::vector<int64_t> shape = lowering.val(parts->front()).shape;
                        auto dim = wrap_dim(args.at("dim").get<int64_t>(), shape.size() + 1);
                        if (!dim) return std::unexpected(dim.error());
                        std::vector<int64_t> unsqueezed = shape;
                        unsqueezed.insert(unsqueezed.begin() + *dim, 1);
                        std::vector<int> views;
                        for (int part : *parts) {
                          if (lowering.val(part).shape != shape)
                            return std::unexpected("stack of tensors of different shapes");
                          Val view;
                          view.kind = ValKind::alias;
                          view.shape = unsqueezed;
                          view.args = {part};
                          views.push_back(lowering.add(std::move(view)));
                        }
                        return concatenated(lowering, node, views, *dim);
                      }};
  t["aten::hstack"] = stack_like("hstack", 1, 1);
  t["aten::vstack"] = stack_like("vstack", 2, 0);
  t["aten::row_stack"] = stack_like("row_stack", 2, 0);
  t["aten::dstack"] = stack_like("dstack", 3, 2);
  t["aten::column_stack"] = stack_like("column_stack", 2, 1);
  for (size_t rank : {1, 2, 3}) {
    const std::string name = "atleast_" + std::to_string(rank) + "d";
    t["aten::" + name] = {"aten::" + name + "(Tensor self) -> Tensor",
                          [rank](Lowering& lowering, const Json& args, const Node& node) -> Result {
                            auto self = lowering.tensor(args.at("self"));
                            if (!self) return std::unexpected(self.error());
                            return bind_alias(lowering, node, *self, at_least(lowering.val(*self).shape, rank));
                          }};
  }
  t["aten::permute"] = {"aten::permute(Tensor(a) self, int[] dims) -> Tensor(a)",
                        [](Lowering& lowering, const Json& args, const Node& node) -> Result {
                          auto self = lowering.tensor(args.at("self"));
                          auto dims = int_list(args, "dims");
                          if (!self) return std::unexpected(self.error());
                          if (!dims) return std::unexpected(dims.error());
                          size_t rank = lowering.val(*self).shape.size();
                          if (dims->size() != rank) return std::unexpected("permute dims do not match the rank");
                          std::vector<int> perm;
                          for (int64_t d : *dims) {
                            auto dim = wrap_dim(d, rank);
                            if (!dim) return std::unexpected(dim.error());
                            perm.push_back(*dim);
                          }
                          return permuted(lowering, node, *self, perm);
                        }};
}

}  // namespace ca::builtin
