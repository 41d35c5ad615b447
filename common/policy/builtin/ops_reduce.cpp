// Reductions over dims, softmax/log_softmax, and the norms (layer, RMS, group, instance, batch).
#include <algorithm>
#include <cmath>
#include <set>

#include "policy/builtin/ops_util.h"

namespace ca::builtin {
namespace {

using Result = std::expected<void, std::string>;

int buffer_val(Lowering& lowering, std::vector<int64_t> shape) {
  Val val;
  val.kind = ValKind::buffer;
  val.shape = std::move(shape);
  return lowering.add(std::move(val));
}

}  // namespace

std::expected<int, std::string> reduce_val(Lowering& lowering, int self, const std::vector<int64_t>& dims, bool keepdim,
                                           const std::string& op, double p) {
  const std::vector<int64_t>& shape = lowering.val(self).shape;
  std::set<int> reduced;
  for (int64_t d : dims) {
    auto dim = wrap_dim(d, shape.size());
    if (!dim) return std::unexpected(dim.error());
    if (!shape.empty()) reduced.insert(*dim);
  }
  if (dims.empty()) {
    for (size_t i = 0; i < shape.size(); ++i) reduced.insert(static_cast<int>(i));
  }
  Step step;
  step.kind = StepKind::reduce;
  step.in = self;
  step.op = op;
  step.p = p;
  std::vector<int64_t> out_shape;
  for (size_t i = 0; i < shape.size(); ++i) {
    bool is_reduced = reduced.contains(static_cast<int>(i));
    if (is_reduced) step.reduce_dims.push_back(static_cast<int>(i));
    if (!is_reduced) out_shape.push_back(shape[i]);
    if (is_reduced && keepdim) out_shape.push_back(1);
  }
  bool contiguous = reduced.empty() || *reduced.rbegin() - *reduced.begin() + 1 == static_cast<int>(reduced.size());
  step.general_dims = !contiguous;
  step.extent = 1;
  for (int d : reduced) step.extent *= shape[d];
  int first = reduced.empty() ? static_cast<int>(shape.size()) : *reduced.begin();
  int last = reduced.empty() ? static_cast<int>(shape.size()) - 1 : *reduced.rbegin();
  step.outer = product(shape, 0, first);
  step.inner = product(shape, last + 1, shape.size());
  if (step.general_dims) {  // one unit per output element, whose inputs rindex finds
    step.outer = product(shape, 0, shape.size()) / std::max<int64_t>(step.extent, 1);
    step.inner = 1;
  }
  if (step.extent == 0) return std::unexpected("reduction over an empty dim");
  step.out = buffer_val(lowering, out_shape);
  const int out = step.out;
  lowering.add_step(std::move(step));
  lowering.note_pattern("reduction");
  return out;
}

std::expected<int, std::string> scan_val(Lowering& lowering, int self, int64_t dim, const std::string& op) {
  const std::vector<int64_t>& shape = lowering.val(self).shape;
  auto wrapped = wrap_dim(dim, shape.size());
  if (!wrapped) return std::unexpected(wrapped.error());
  Step step;
  step.kind = StepKind::scan;
  step.op = op;
  step.in = self;
  step.outer = product(shape, 0, *wrapped);
  step.extent = shape.empty() ? 1 : shape[*wrapped];
  step.inner = product(shape, *wrapped + 1, shape.size());
  step.out = buffer_val(lowering, shape);
  const int out = step.out;
  lowering.add_step(std::move(step));
  lowering.note_pattern("scan");
  return out;
}

namespace {

// The reduction `op` of `self` over `dims` (empty: all dims); binds outputs[0] to the result.
Result reduce(Lowering& lowering, const Node& node, int self, const std::vector<int64_t>& dims, bool keepdim,
              const std::string& op, double p = 2) {
  auto out = reduce_val(lowering, self, dims, keepdim, op, p);
  if (!out) return std::unexpected(out.error());
  lowering.bind(node.outputs[0], *out);
  return {};
}

// torch.linalg's norms as ATen dispatches them: ord None or "fro" is the 2-norm over the dims (all when none are
// given); a numeric ord over one dim, or over a 1-d input, is that vector norm; over two dims (a matrix norm), ord
// +-1 and +-inf are a sum of magnitudes along one dim (the rows for 1, the columns for inf) and then its max or min
// along the other. The spectral and nuclear norms (ord +-2, "nuc") need singular values: uncovered.
Result linalg_norm(Lowering& lowering, const Json& args, const Node& node, bool matrix) {
  if (auto ok = float32_only(args, "dtype"); !ok) return ok;
  auto self = lowering.tensor(args.at("self"));
  if (!self) return std::unexpected(self.error());
  const size_t rank = lowering.val(*self).shape.size();
  std::vector<int64_t> dims;
  if (!args.at("dim").is_null()) {
    auto list = int_list(args, "dim");
    if (!list) return std::unexpected(list.error());
    dims = *list;
  }
  const bool keepdim = args.at("keepdim").get<bool>();
  const Json& ord = args.at("ord");
  if (ord.is_null() || ord == "fro") return reduce(lowering, node, *self, dims, keepdim, "norm", 2);
  if (ord.is_string()) return std::unexpected("ord '" + ord.get<std::string>() + "' needs singular values");
  auto p = number(args, "ord");
  if (!p) return std::unexpected(p.error());
  if (!matrix && (dims.size() == 1 || (dims.empty() && rank == 1)))
    return reduce(lowering, node, *self, dims, keepdim, "norm", *p);
  if (dims.empty() && (matrix || rank == 2)) dims = {-2, -1};
  if (dims.size() != 2) return std::unexpected("a numeric ord over " + std::to_string(dims.size()) + " dims");
  const bool inf = std::isinf(*p);
  if (!inf && std::fabs(*p) != 1) return std::unexpected("ord " + std::to_string(*p) + " needs singular values");
  auto first = wrap_dim(dims[inf ? 1 : 0], rank), second = wrap_dim(dims[inf ? 0 : 1], rank);
  if (!first) return std::unexpected(first.error());
  if (!second) return std::unexpected(second.error());
  if (*first == *second) return std::unexpected("a matrix norm over one dim twice");
  auto magnitude = lowering.pointwise("fabsf($0)", {*self});
  if (!magnitude) return std::unexpected(magnitude.error());
  auto sums = reduce_val(lowering, *magnitude, {*first}, keepdim, "sum");
  if (!sums) return std::unexpected(sums.error());
  const int64_t along = keepdim || *second < *first ? *second : *second - 1;  // the first dim is gone unless kept
  return reduce(lowering, node, *sums, {along}, keepdim, *p > 0 ? "amax" : "amin");
}

// A reduction op: `dim_name` names its dims ("" = all), `keepdim_name` its keepdim ("" = false).
OpEntry reduction_op(std::string schema, const std::string& op, std::string dim_name, std::string keepdim_name,
                     std::string dtype_name = "") {
  OpHandler handler = [=](Lowering& lowering, const Json& args, const Node& node) -> Result {
    if (!dtype_name.empty()) {
      if (auto ok = float32_only(args, dtype_name); !ok) return ok;
    }
    auto self = lowering.tensor(args.at("self"));
    if (!self) return std::unexpected(self.error());
    std::vector<int64_t> dims;
    if (!dim_name.empty() && !args.at(dim_name).is_null()) {
      auto list = int_list(args, dim_name);
      if (!list) return std::unexpected(list.error());
      dims = *list;
    }
    bool keepdim = !keepdim_name.empty() && args.at(keepdim_name).get<bool>();
    return reduce(lowering, node, *self, dims, keepdim, op);
  };
  return {std::move(schema), std::move(handler)};
}

// The int64 index of the first largest (`op` argmax) or smallest (argmin) element over `dims`, NaN counting as the
// extreme, bound to `name`: an output, or an operand beside a float32 one.
Result bind_indices(Lowering& lowering, const std::string& name, int self, const std::vector<int64_t>& dims,
                    bool keepdim, const std::string& op) {
  auto indices = reduce_val(lowering, self, dims, keepdim, op);
  if (!indices) return std::unexpected(indices.error());
  lowering.set_dtype(*indices, DType::int64);
  lowering.bind(name, *indices);
  lowering.operand_only(name, "reads the int64 indices of " + op + " other than as an output or an operand");
  return {};
}

// max.dim / min.dim: the values and the indices (argmax/argmin along the dim).
OpEntry max_min_dim(const std::string& name) {
  return {"aten::" + name + ".dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
          [name](Lowering& lowering, const Json& args, const Node& node) -> Result {
            auto self = lowering.tensor(args.at("self"));
            if (!self) return std::unexpected(self.error());
            const std::vector<int64_t> dims = {args.at("dim").get<int64_t>()};
            const bool keepdim = args.at("keepdim").get<bool>();
            auto result = reduce(lowering, node, *self, dims, keepdim, name == "max" ? "amax" : "amin");
            if (!result || node.outputs.size() < 2) return result;
            return bind_indices(lowering, node.outputs[1], *self, dims, keepdim, name == "max" ? "argmax" : "argmin");
          }};
}

// argmax / argmin over one dim, or over the whole tensor flattened (dim None).
OpEntry arg_extreme(const std::string& op) {
  return {"aten::" + op + "(Tensor self, int? dim=None, bool keepdim=False) -> Tensor",
          [op](Lowering& lowering, const Json& args, const Node& node) -> Result {
            auto self = lowering.tensor(args.at("self"));
            if (!self) return std::unexpected(self.error());
            std::vector<int64_t> dims;
            if (!args.at("dim").is_null()) dims = {args.at("dim").get<int64_t>()};
            return bind_indices(lowering, node.outputs[0], *self, dims, args.at("keepdim").get<bool>(), op);
          }};
}

// var/std: correction from `unbiased` (bool) or `correction` (Scalar?, default 1).
OpHandler variance(const std::string& op, bool has_dims, const std::string& correction_name) {
  return [=](Lowering& lowering, const Json& args, const Node& node) -> Result {
    auto self = lowering.tensor(args.at("self"));
    if (!self) return std::unexpected(self.error());
    std::vector<int64_t> dims;
    if (has_dims && !args.at("dim").is_null()) {
      auto list = int_list(args, "dim");
      if (!list) return std::unexpected(list.error());
      dims = *list;
    }
    double correction = 1;
    const Json& given = args.at(correction_name);
    if (given.is_boolean()) correction = given.get<bool>() ? 1 : 0;
    if (given.is_number()) correction = given.get<double>();
    bool keepdim = has_dims && args.at("keepdim").get<bool>();
    return reduce(lowering, node, *self, dims, keepdim, op, correction);
  };
}

OpEntry softmax_op(const std::string& name) {
  return {"aten::" + name + ".int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor",
          [name](Lowering& lowering, const Json& args, const Node& node) -> Result {
            if (auto ok = float32_only(args, "dtype"); !ok) return ok;
            auto self = lowering.tensor(args.at("self"));
            if (!self) return std::unexpected(self.error());
            auto dim = wrap_dim(args.at("dim").get<int64_t>(), lowering.val(*self).shape.size());
            if (!dim) return std::unexpected(dim.error());
            lowering.bind(node.outputs[0], softmax_step(lowering, *self, *dim, name));
            return {};
          }};
}

// A norm step over `self`; the caller has set op, outer, extent, inner, groups, eps.
Result norm_step(Lowering& lowering, const Node& node, int self, Step step, const Json& weight, const Json& bias) {
  auto w = lowering.optional_tensor(weight);
  auto b = lowering.optional_tensor(bias);
  if (!w || !b) return std::unexpected(!w ? w.error() : b.error());
  step.kind = StepKind::norm;
  step.in = self;
  step.weight = *w;
  step.bias = *b;
  step.out = buffer_val(lowering, lowering.val(self).shape);
  lowering.bind(node.outputs[0], step.out);
  lowering.add_step(std::move(step));
  lowering.note_pattern("norm");
  return {};
}

// normalized over the trailing dims `normalized_shape` (layer_norm, rms_norm)
Result rows_norm(Lowering& lowering, const Json& args, const Node& node, const std::string& op, double eps) {
  auto self = lowering.tensor(args.at("input"));
  auto normalized = int_list(args, "normalized_shape");
  if (!self) return std::unexpected(self.error());
  if (!normalized) return std::unexpected(normalized.error());
  const std::vector<int64_t>& shape = lowering.val(*self).shape;
  if (normalized->size() > shape.size()) return std::unexpected("normalized_shape longer than the input");
  if (!std::equal(normalized->begin(), normalized->end(), shape.end() - normalized->size())) {
    return std::unexpected("normalized_shape does not match the input's trailing dims");
  }
  Step step;
  step.op = op;
  step.extent = product(*normalized, 0, normalized->size());
  step.outer = lowering.val(*self).numel() / std::max<int64_t>(step.extent, 1);
  step.eps = eps;
  return norm_step(lowering, node, *self, std::move(step), args.at("weight"),
                   op == "rms" ? Json(nullptr) : args.at("bias"));
}

// Per-(sample, group) statistics over [N, C, *] (group_norm; instance_norm with groups = C).
Result group_norm(Lowering& lowering, const Node& node, int self, int64_t groups, double eps, const Json& weight,
                  const Json& bias) {
  const std::vector<int64_t>& shape = lowering.val(self).shape;
  if (shape.size() < 2) return std::unexpected("group norm of a tensor with fewer than 2 dims");
  if (groups <= 0 || shape[1] % groups != 0) return std::unexpected("channels do not divide into the groups");
  Step step;
  step.op = "group";
  step.groups = groups;
  step.inner = product(shape, 2, shape.size());
  step.outer = shape[0] * groups;
  step.extent = shape[1] / groups * step.inner;
  step.eps = eps;
  return norm_step(lowering, node, self, std::move(step), weight, bias);
}

// Normalization with given statistics per channel (dim 1): batch_norm in eval mode, instance_norm without input stats.
Result channel_affine(Lowering& lowering, const Json& args, const Node& node, double eps) {
  auto x = lowering.tensor(args.at("input"));
  auto mean = lowering.optional_tensor(args.at("running_mean"));
  auto var = lowering.optional_tensor(args.at("running_var"));
  auto w = lowering.optional_tensor(args.at("weight"));
  auto b = lowering.optional_tensor(args.at("bias"));
  for (const auto* id : {&x, &mean, &var, &w, &b}) {
    if (!*id) return std::unexpected(id->error());
  }
  if (*mean < 0 || *var < 0) return std::unexpected("normalizing with running statistics that are None");
  if (lowering.val(*x).shape.size() < 2) return std::unexpected("batch norm of a tensor with fewer than 2 dims");
  Val val;
  val.kind = ValKind::pointwise;
  val.shape = lowering.val(*x).shape;
  val.args = {*x, *mean, *var};
  val.expr = "(($0 - $1) / sqrtf($2 + " + float_literal(eps) + "))";
  if (*w >= 0) {
    val.expr += " * $" + std::to_string(val.args.size());
    val.args.push_back(*w);
  }
  if (*b >= 0) {
    val.expr = "(" + val.expr + " + $" + std::to_string(val.args.size()) + ")";
    val.args.push_back(*b);
  }
  val.align.assign(val.args.size(), 1);
  val.align[0] = -1;
  lowering.bind(node.outputs[0], lowering.add(std::move(val)));
  lowering.note_pattern("norm");
  return {};
}

}  // namespace

int softmax_step(Lowering& lowering, int self, int dim, const std::string& op) {
  const std::vector<int64_t> shape = lowering.val(self).shape;
  Step step;
  step.kind = StepKind::softmax;
  step.op = op;
  step.in = self;
  step.outer = product(shape, 0, dim);
  step.extent = shape.empty() ? 1 : shape[dim];
  step.inner = product(shape, dim + 1, shape.size());
  step.out = buffer_val(lowering, shape);
  const int out = step.out;
  lowering.add_step(std::move(step));
  lowering.note_pattern("softmax");
  return out;
}

void register_reduction_ops(std::map<std::string, OpEntry>& t) {
  t["aten::sum"] = reduction_op("aten::sum(Tensor self, *, ScalarType? dtype=None) -> Tensor", "sum", "", "", "dtype");
  t["aten::sum.dim_IntList"] = reduction_op(
      "aten::sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor", "sum",
      "dim", "keepdim", "dtype");
  t["aten::mean"] =
      reduction_op("aten::mean(Tensor self, *, ScalarType? dtype=None) -> Tensor", "mean", "", "", "dtype");
  t["aten::mean.dim"] =
      reduction_op("aten::mean.dim(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
                   "mean", "dim", "keepdim", "dtype");
  t["aten::prod"] =
      reduction_op("aten::prod(Tensor self, *, ScalarType? dtype=None) -> Tensor", "prod", "", "", "dtype");
  t["aten::prod.dim_int"] =
      reduction_op("aten::prod.dim_int(Tensor self, int dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
                   "prod", "dim", "keepdim", "dtype");
  t["aten::amax"] =
      reduction_op("aten::amax(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor", "amax", "dim", "keepdim");
  t["aten::amin"] =
      reduction_op("aten::amin(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor", "amin", "dim", "keepdim");
  t["aten::max"] = reduction_op("aten::max(Tensor self) -> Tensor", "amax", "", "");
  t["aten::min"] = reduction_op("aten::min(Tensor self) -> Tensor", "amin", "", "");
  t["aten::argmax"] = arg_extreme("argmax");
  t["aten::argmin"] = arg_extreme("argmin");
  t["aten::max.dim"] = max_min_dim("max");
  t["aten::min.dim"] = max_min_dim("min");
  t["aten::logsumexp"] = reduction_op("aten::logsumexp(Tensor self, int[1] dim, bool keepdim=False) -> Tensor",
                                      "logsumexp", "dim", "keepdim");
  auto norm = [](const std::string& p_name, bool has_dims, const std::string& dtype_name) -> OpHandler {
    return [=](Lowering& lowering, const Json& args, const Node& node) -> Result {
      if (!dtype_name.empty()) {
        if (auto ok = float32_only(args, dtype_name); !ok) return ok;
      }
      auto self = lowering.tensor(args.at("self"));
      if (!self) return std::unexpected(self.error());
      double p = 2;
      if (!args.at(p_name).is_null()) {
        auto value = number(args, p_name);
        if (!value) return std::unexpected(value.error());
        p = *value;
      }
      std::vector<int64_t> dims;
      if (has_dims && !args.at("dim").is_null()) {
        auto list = int_list(args, "dim");
        if (!list) return std::unexpected(list.error());
        dims = *list;
      }
      bool keepdim = has_dims && args.at("keepdim").get<bool>();
      return reduce(lowering, node, *self, dims, keepdim, "norm", p);
    };
  };
  t["aten::norm.Scalar"] = {"aten::norm.Scalar(Tensor self, Scalar p=2) -> Tensor", norm("p", false, "")};
  t["aten::norm.ScalarOpt_dim"] = {
      "aten::norm.ScalarOpt_dim(Tensor self, Scalar? p, int[1] dim, bool keepdim=False) -> Tensor",
      norm("p", true, "")};
  t["aten::linalg_vector_norm"] = {
      "aten::linalg_vector_norm(Tensor self, Scalar ord=2, int[1]? dim=None, bool keepdim=False, *, ScalarType? "
      "dtype=None) -> "
      "Tensor",
      norm("ord", true, "dtype")};
  // linalg_norm and linalg_matrix_norm, each with a numeric and a string ord.
  const std::pair<std::string, bool> linalg_norms[] = {
      {"aten::linalg_norm(Tensor self, Scalar? ord=None, int[1]? dim=None, bool keepdim=False, *, "
       "ScalarType? dtype=None) -> Tensor",
       false},
      {"aten::linalg_norm.ord_str(Tensor self, str ord, int[1]? dim=None, bool keepdim=False, *, "
       "ScalarType? dtype=None) -> Tensor",
       false},
      {"aten::linalg_matrix_norm(Tensor self, Scalar ord, int[] dim=[-2, -1], bool keepdim=False, *, "
       "ScalarType? dtype=None) -> Tensor",
       true},
      {"aten::linalg_matrix_norm.str_ord(Tensor self, str ord=\"fro\", int[] dim=[-2, -1], bool keepdim=False, *, "
       "ScalarType? dtype=None) -> Tensor",
       true}};
  for (const auto& [schema, matrix] : linalg_norms) {
    t[schema.substr(0, schema.find('('))] = {schema, [matrix](Lowering& lowering, const Json& args, const Node& node) {
                                               return linalg_norm(lowering, args, node, matrix);
                                             }};
  }
  for (const std::string op : {"var", "std"}) {
    t["aten::" + op] = {"aten::" + op + "(Tensor self, bool unbiased=True) -> Tensor", variance(op, false, "unbiased")};
    t["aten::" + op + ".dim"] = {
        "aten::" + op + ".dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> Tensor",
        variance(op, true, "unbiased")};
    t["aten::" + op + ".correction"] = {
        "aten::" + op +
            ".correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> Tensor",
        variance(op, true, "correction")};
  }
  t["aten::frobenius_norm.dim"] = reduction_op(
      "aten::frobenius_norm.dim(Tensor self, int[1] dim, bool keepdim=False) -> Tensor", "norm", "dim", "keepdim");
  t["aten::nansum"] = reduction_op(
      "aten::nansum(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor", "nansum",
      "dim", "keepdim", "dtype");
  // renorm: each slice along `dim` whose p-norm exceeds maxnorm is scaled down to it.
  t["aten::renorm"] = {
      "aten::renorm(Tensor self, Scalar p, int dim, Scalar maxnorm) -> Tensor",
      [](Lowering& lowering, const Json& args, const Node& node) -> Result {
        auto self = lowering.tensor(args.at("self"));
        auto p = number(args, "p");
        auto maxnorm = number(args, "maxnorm");
        if (!self || !p || !maxnorm) return std::unexpected(!self ? self.error() : "p and maxnorm must be literals");
        const std::vector<int64_t>& shape = lowering.val(*self).shape;
        auto dim = wrap_dim(args.at("dim").get<int64_t>(), shape.size());
        if (!dim || shape.size() < 2) return std::unexpected("renorm needs a dim of a tensor with 2 or more dims");
        std::vector<int64_t> others;
        for (size_t d = 0; d < shape.size(); ++d) {
          if (static_cast<int>(d) != *dim) others.push_back(static_cast<int64_t>(d));
        }
        Node norm_node = node;
        norm_node.outputs = {node.outputs[0] + "#norm"};
        if (auto ok = reduce(lowering, norm_node, *self, others, true, "norm", *p); !ok) return ok;
        auto norms = lowering.tensor(Json("%" + norm_node.outputs[0]));
        std::string m = float_literal(*maxnorm);
        auto out = lowering.pointwise("($1 > " + m + " ? $0 * (" + m + " / ($1 + 1e-7f)) : $0)", {*self, *norms});
        if (!out) return std::unexpected(out.error());
        lowering.bind(node.outputs[0], *out);
        return {};
      }};
  // Scans along a dim: cumsum, cumprod, and logcumsumexp (a running log-sum-exp).
  auto scan = [](const std::string& op, bool has_dtype) -> OpHandler {
    return [op, has_dtype](Lowering& lowering, const Json& args, const Node& node) -> Result {
      if (has_dtype) {
        if (auto ok = float32_only(args, "dtype"); !ok) return ok;
      }
      auto self = lowering.tensor(args.at("self"));
      if (!self) return std::unexpected(self.error());
      auto out = scan_val(lowering, *self, args.at("dim").get<int64_t>(), op);
      if (!out) return std::unexpected(out.error());
      lowering.bind(node.outputs[0], *out);
      return {};
    };
  };
  for (const std::string op : {"cumsum", "cumprod"})
    t["aten::" + op] = {"aten::" + op + "(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor", scan(op, true)};
  t["aten::logcumsumexp"] = {"aten::logcumsumexp(Tensor self, int dim) -> Tensor", scan("logcumsumexp", false)};
  t["aten::softmax.int"] = softmax_op("softmax");
  t["aten::log_softmax.int"] = softmax_op("log_softmax");
}

void register_norm_ops(std::map<std::string, OpEntry>& t) {
  t["aten::layer_norm"] = {
      "aten::layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, Tensor? bias=None, float "
      "eps=1.0000000000000001e-05, bool cudnn_enable=True) -> Tensor",
      [](Lowering& lowering, const Json& args, const Node& node) {
        return rows_norm(lowering, args, node, "rows", args.at("eps").get<double>());
      }};
  t["aten::rms_norm"] = {
      "aten::rms_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, float? eps=None) -> Tensor",
      [](Lowering& lowering, const Json& args, const Node& node) {
        // eps None: the dtype's machine epsilon, as torch does
        double eps = args.at("eps").is_null() ? 1.1920928955078125e-07 : args.at("eps").get<double>();
        return rows_norm(lowering, args, node, "rms", eps);
      }};
  t["aten::group_norm"] = {
      "aten::group_norm(Tensor input, int num_groups, Tensor? weight=None, Tensor? bias=None, float "
      "eps=1.0000000000000001e-05, bool cudnn_enabled=True) -> Tensor",
      [](Lowering& lowering, const Json& args, const Node& node) -> Result {
        auto self = lowering.tensor(args.at("input"));
        if (!self) return std::unexpected(self.error());
        return group_norm(lowering, node, *self, args.at("num_groups").get<int64_t>(), args.at("eps").get<double>(),
                          args.at("weight"), args.at("bias"));
      }};
  t["aten::instance_norm"] = {
      "aten::instance_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, bool "
      "use_input_stats, float momentum, float eps, bool cudnn_enabled) -> Tensor",
      [](Lowering& lowering, const Json& args, const Node& node) -> Result {
        double eps = args.at("eps").get<double>();
        if (!args.at("use_input_stats").get<bool>()) return channel_affine(lowering, args, node, eps);
        auto self = lowering.tensor(args.at("input"));
        if (!self) return std::unexpected(self.error());
        const std::vector<int64_t>& shape = lowering.val(*self).shape;
        if (shape.size() < 2) return std::unexpected("instance norm of a tensor with fewer than 2 dims");
        return group_norm(lowering, node, *self, shape[1], eps, args.at("weight"), args.at("bias"));
      }};
  // What torch.export records for batch norm in eval mode; the saved mean and invstd it also returns are empty.
  t["aten::_native_batch_norm_legit_no_training"] = {
      "aten::_native_batch_norm_legit_no_training(Tensor input, Tensor? weight, Tensor? bias, Tensor running_mean, "
      "Tensor running_var, float momentum, float eps) -> (Tensor, Tensor, Tensor)",
      [](Lowering& lowering, const Json& args, const Node& node) -> Result {
        for (size_t k = 1; k < node.outputs.size(); ++k) {
          lowering.forbid(node.outputs[k], "reads the saved statistics of batch norm in eval mode (empty tensors)");
        }
        return channel_affine(lowering, args, node, args.at("eps").get<double>());
      }};
  t["aten::batch_norm"] = {
      "aten::batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, bool "
      "training, float momentum, float eps, bool cudnn_enabled) -> Tensor",
      [](Lowering& lowering, const Json& args, const Node& node) -> Result {
        double eps = args.at("eps").get<double>();
        if (!args.at("training").get<bool>()) return channel_affine(lowering, args, node, eps);
        auto self = lowering.tensor(args.at("input"));
        if (!self) return std::unexpected(self.error());
        const std::vector<int64_t>& shape = lowering.val(*self).shape;
        if (shape.size() < 2) return std::unexpected("batch norm of a tensor with fewer than 2 dims");
        Step step;
        step.op = "batch";
        step.batch = shape[0];
        step.outer = shape[1];
        step.inner = product(shape, 2, shape.size());
        step.extent = shape[0] * step.inner;
        step.eps = eps;
        return norm_step(lowering, node, *self, std::move(step), args.at("weight"), args.at("bias"));
      }};
}

}  // namespace ca::builtin
