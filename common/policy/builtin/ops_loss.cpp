// Losses and distances: a pointwise expression of the operands (ATen's formula, element by element), then the
// loss's reduction (none, mean, sum) or the distance's norm as a reduce step.
#include "policy/builtin/ops_util.h"

namespace ca::builtin {
namespace {

using Result = std::expected<void, std::string>;
using Value = std::expected<int, std::string>;

// `x` clamped below at 0, NaN kept (as clamp_min does).
std::string relu_of(const std::string& x) {
  return "(" + x + " < 0.f ? 0.f : " + x + ")";
}

// The smaller of two, NaN kept (as at::min does).
const char* const min_expr = "($0 < $1 || $0 != $0 ? $0 : $1)";

// ATen's loss reduction (at::Reduction): 0 none, 1 mean over every element, 2 sum.
Value reduced(Lowering& lowering, int loss, const Json& args) {
  const Json& reduction = args.at("reduction");
  if (!reduction.is_number_integer()) return std::unexpected("argument 'reduction' is not an int literal");
  switch (reduction.get<int64_t>()) {
    case 0:
      return loss;
    case 1:
      return reduce_val(lowering, loss, {}, false, "mean");
    case 2:
      return reduce_val(lowering, loss, {}, false, "sum");
    default:
      return std::unexpected("reduction " + reduction.dump() + " is not none, mean or sum");
  }
}

// The tensor args named, in order; an optional one that is null is left out.
std::expected<std::vector<int>, std::string> tensors(Lowering& lowering, const Json& args,
                                                     const std::vector<std::string>& names) {
  std::vector<int> ids;
  for (const std::string& name : names) {
    auto id = lowering.optional_tensor(args.at(name));
    if (!id) return std::unexpected(id.error());
    if (*id >= 0) ids.push_back(*id);
  }
  return ids;
}

Result bind_output(Lowering& lowering, const Node& node, const Value& value) {
  if (!value) return std::unexpected(value.error());
  lowering.bind(node.outputs[0], *value);
  lowering.note_pattern("loss");
  return {};
}

// A loss that is `expr` over the tensor args (by name) with float args filled in, then reduced.
OpEntry elementwise_loss(std::string schema, std::vector<std::string> names, std::string expr,
                         std::vector<std::string> scalars = {}) {
  return {std::move(schema), [=](Lowering& lowering, const Json& args, const Node& node) -> Result {
            auto ids = tensors(lowering, args, names);
            if (!ids) return std::unexpected(ids.error());
            auto text = with_scalars(expr, args, scalars);
            if (!text) return std::unexpected(text.error());
            auto loss = lowering.pointwise(*text, *ids);
            if (!loss) return std::unexpected(loss.error());
            return bind_output(lowering, node, reduced(lowering, *loss, args));
          }};
}

// ATen's pairwise_distance: the p-norm of x1 - x2 + eps over the last dim of their broadcast.
Value pairwise_distance(Lowering& lowering, int x1, int x2, double p, double eps, bool keepdim) {
  auto diff = lowering.pointwise("($0 - $1 + " + float_literal(eps) + ")", {x1, x2});
  if (!diff) return diff;
  const int64_t rank = static_cast<int64_t>(lowering.val(*diff).shape.size());
  if (rank == 0) return std::unexpected("pairwise_distance of 0-d tensors");
  return reduce_val(lowering, *diff, {rank - 1}, keepdim, "norm", p);
}

// `value` expanded to the broadcast of its shape and `other`'s (a pointwise read of itself alone).
Value expanded(Lowering& lowering, int value, int other) {
  if (lowering.val(value).shape == lowering.val(other).shape) return value;
  return lowering.pointwise("$0", {value, other});
}

Result smooth_l1(Lowering& lowering, const Json& args, const Node& node) {
  auto ids = tensors(lowering, args, {"self", "target"});
  if (!ids) return std::unexpected(ids.error());
  auto beta = number(args, "beta");
  if (!beta) return std::unexpected(beta.error());
  const std::string b = float_literal(*beta);
  const std::string expr = *beta == 0 ? "fabsf($0 - $1)"
                                      : "(fabsf($0 - $1) < " + b + " ? 0.5f * ($0 - $1) * ($0 - $1) / " + b +
                                            " : fabsf($0 - $1) - 0.5f * " + b + ")";
  auto loss = lowering.pointwise(expr, *ids);
  if (!loss) return std::unexpected(loss.error());
  return bind_output(lowering, node, reduced(lowering, *loss, args));
}

Result kl_div(Lowering& lowering, const Json& args, const Node& node) {
  auto ids = tensors(lowering, args, {"self", "target"});
  if (!ids) return std::unexpected(ids.error());
  // xlogy(target, target) - target * input, or with log_target exp(target) * (target - input)
  const std::string expr =
      args.at("log_target").get<bool>() ? "(expf($1) * ($1 - $0))" : "(($1 == 0.f ? 0.f : $1 * logf($1)) - $1 * $0)";
  auto loss = lowering.pointwise(expr, *ids);
  if (!loss) return std::unexpected(loss.error());
  return bind_output(lowering, node, reduced(lowering, *loss, args));
}

// binary_cross_entropy: logs clamped at -100, as ATen does; the weight multiplies each element's loss.
Result bce(Lowering& lowering, const Json& args, const Node& node) {
  auto ids = tensors(lowering, args, {"self", "target", "weight"});
  if (!ids) return std::unexpected(ids.error());
  std::string expr = "(($1 - 1.f) * fmaxf(log1pf(-$0), -100.f) - $1 * fmaxf(logf($0), -100.f))";
  if (ids->size() == 3) expr = "(" + expr + " * $2)";
  auto loss = lowering.pointwise(expr, *ids);
  if (!loss) return std::unexpected(loss.error());
  return bind_output(lowering, node, reduced(lowering, *loss, args));
}

// binary_cross_entropy_with_logits: (1 - t) x + (1 + (pos_weight - 1) t) softplus(-x), times weight.
Result bce_with_logits(Lowering& lowering, const Json& args, const Node& node) {
  auto ids = tensors(lowering, args, {"self", "target"});
  auto weight = lowering.optional_tensor(args.at("weight"));
  auto pos_weight = lowering.optional_tensor(args.at("pos_weight"));
  if (!ids || !weight || !pos_weight) {
    return std::unexpected(!ids ? ids.error() : !weight ? weight.error() : pos_weight.error());
  }
  const std::string softplus_neg = "(log1pf(expf(-fabsf($0))) + ($0 > 0.f ? 0.f : -$0))";
  std::string expr = "((1.f - $1) * $0 + " + softplus_neg + ")";
  if (*pos_weight >= 0) {
    expr = "((1.f - $1) * $0 + (1.f + ($" + std::to_string(ids->size()) + " - 1.f) * $1) * " + softplus_neg + ")";
    ids->push_back(*pos_weight);
  }
  if (*weight >= 0) {
    expr = "(" + expr + " * $" + std::to_string(ids->size()) + ")";
    ids->push_back(*weight);
  }
  auto loss = lowering.pointwise(expr, *ids);
  if (!loss) return std::unexpected(loss.error());
  return bind_output(lowering, node, reduced(lowering, *loss, args));
}

Result poisson_nll(Lowering& lowering, const Json& args, const Node& node) {
  auto ids = tensors(lowering, args, {"input", "target"});
  if (!ids) return std::unexpected(ids.error());
  auto eps = number(args, "eps");
  if (!eps) return std::unexpected(eps.error());
  std::string expr =
      args.at("log_input").get<bool>() ? "(expf($0) - $1 * $0)" : "($0 - $1 * logf($0 + " + float_literal(*eps) + "))";
  // Stirling's approximation of log(target!), where target > 1
  if (args.at("full").get<bool>())
    expr = "(" + expr + " + ($1 > 1.f ? $1 * logf($1) - $1 + 0.5f * logf(2.f * 3.14159265358979f * $1) : 0.f))";
  auto loss = lowering.pointwise(expr, *ids);
  if (!loss) return std::unexpected(loss.error());
  return bind_output(lowering, node, reduced(lowering, *loss, args));
}

Result pairwise_distance_op(Lowering& lowering, const Json& args, const Node& node) {
  auto ids = tensors(lowering, args, {"x1", "x2"});
  auto p = number(args, "p");
  auto eps = number(args, "eps");
  if (!ids || !p || !eps) return std::unexpected(!ids ? ids.error() : !p ? p.error() : eps.error());
  return bind_output(lowering, node,
                     pairwise_distance(lowering, (*ids)[0], (*ids)[1], *p, *eps, args.at("keepdim").get<bool>()));
}

Result triplet_margin(Lowering& lowering, const Json& args, const Node& node) {
  auto ids = tensors(lowering, args, {"anchor", "positive", "negative"});
  auto p = number(args, "p");
  auto eps = number(args, "eps");
  auto margin = number(args, "margin");
  if (!ids || !p || !eps || !margin) {
    return std::unexpected(!ids ? ids.error() : !p ? p.error() : !eps ? eps.error() : margin.error());
  }
  const int anchor = (*ids)[0], positive = (*ids)[1], negative = (*ids)[2];
  auto pos = pairwise_distance(lowering, anchor, positive, *p, *eps, false);
  auto neg = pairwise_distance(lowering, anchor, negative, *p, *eps, false);
  if (!pos || !neg) return std::unexpected(!pos ? pos.error() : neg.error());
  if (args.at("swap").get<bool>()) {
    auto swapped = pairwise_distance(lowering, positive, negative, *p, *eps, false);
    if (!swapped) return std::unexpected(swapped.error());
    neg = lowering.pointwise(min_expr, {*neg, *swapped});
    if (!neg) return std::unexpected(neg.error());
  }
  auto loss = lowering.pointwise(relu_of("(" + float_literal(*margin) + " + $0 - $1)"), {*pos, *neg});
  if (!loss) return std::unexpected(loss.error());
  return bind_output(lowering, node, reduced(lowering, *loss, args));
}

// cosine_similarity: sum over dim of (x1 / max(|x1|, eps)) * (x2 / max(|x2|, eps)), on the broadcast operands.
Result cosine_similarity(Lowering& lowering, const Json& args, const Node& node) {
  auto ids = tensors(lowering, args, {"x1", "x2"});
  auto eps = number(args, "eps");
  if (!ids || !eps) return std::unexpected(!ids ? ids.error() : eps.error());
  auto x1 = expanded(lowering, (*ids)[0], (*ids)[1]);
  auto x2 = expanded(lowering, (*ids)[1], (*ids)[0]);
  if (!x1 || !x2) return std::unexpected(!x1 ? x1.error() : x2.error());
  auto dim = wrap_dim(args.at("dim").get<int64_t>(), lowering.val(*x1).shape.size());
  if (!dim) return std::unexpected(dim.error());
  auto n1 = reduce_val(lowering, *x1, {*dim}, true, "norm");
  auto n2 = reduce_val(lowering, *x2, {*dim}, true, "norm");
  if (!n1 || !n2) return std::unexpected(!n1 ? n1.error() : n2.error());
  const std::string e = float_literal(*eps);
  auto product = lowering.pointwise("($0 / fmaxf($2, " + e + ") * ($1 / fmaxf($3, " + e + ")))", {*x1, *x2, *n1, *n2});
  if (!product) return std::unexpected(product.error());
  return bind_output(lowering, node, reduce_val(lowering, *product, {*dim}, false, "sum"));
}

// cosine_embedding_loss: 1 - cos where target is 1, max(cos - margin, 0) where it is -1, cos over the last dim.
Result cosine_embedding(Lowering& lowering, const Json& args, const Node& node) {
  auto ids = tensors(lowering, args, {"input1", "input2", "target"});
  auto margin = number(args, "margin");
  if (!ids || !margin) return std::unexpected(!ids ? ids.error() : margin.error());
  const int a = (*ids)[0], b = (*ids)[1], target = (*ids)[2];
  const int64_t rank = static_cast<int64_t>(lowering.val(a).shape.size());
  if (rank == 0 || lowering.val(b).shape.size() != static_cast<size_t>(rank))
    return std::unexpected("cosine_embedding_loss: inputs of rank 1 or 2, the same");
  auto dot = lowering.pointwise("($0 * $1)", {a, b});
  auto aa = lowering.pointwise("($0 * $0)", {a});
  auto bb = lowering.pointwise("($0 * $0)", {b});
  if (!dot || !aa || !bb) return std::unexpected("cosine_embedding_loss: shapes do not broadcast");
  auto sum_dot = reduce_val(lowering, *dot, {rank - 1}, false, "sum");
  auto sum_aa = reduce_val(lowering, *aa, {rank - 1}, false, "sum");
  auto sum_bb = reduce_val(lowering, *bb, {rank - 1}, false, "sum");
  if (!sum_dot || !sum_aa || !sum_bb) return std::unexpected(!sum_dot ? sum_dot.error() : sum_aa.error());
  // cos = dot / sqrt((|a|^2 + 1e-12) (|b|^2 + 1e-12)), ATen's epsilon
  const std::string cos = "($0 / sqrtf(($1 + 1e-12f) * ($2 + 1e-12f)))";
  const std::string expr = "($3 == 1.f ? 1.f - " + cos + " : 0.f) + ($3 == -1.f ? " +
                           relu_of("(" + cos + " - " + float_literal(*margin) + ")") + " : 0.f)";
  auto loss = lowering.pointwise("(" + expr + ")", {*sum_dot, *sum_aa, *sum_bb, target});
  if (!loss) return std::unexpected(loss.error());
  return bind_output(lowering, node, reduced(lowering, *loss, args));
}

// nll_loss and cross_entropy_loss over class indices: self [N, C, d...], target int64 [N, d...]. Each element's
// loss is -self[n, target] (cross entropy: of log_softmax over the classes, i.e. logsumexp - self[n, target]),
// times weight[target]; a target equal to ignore_index adds nothing and weighs nothing in the mean.
Result class_loss(Lowering& lowering, const Json& args, const Node& node, bool log_softmax) {
  auto self = lowering.tensor(args.at("self"));
  auto target = lowering.operand(args.at("target"));
  auto weight = lowering.optional_tensor(args.at("weight"));
  if (!self || !target || !weight) {
    return std::unexpected(!self ? self.error() : !target ? target.error() : weight.error());
  }
  if (lowering.val(*target).dtype != static_cast<int>(DType::int64))
    return std::unexpected("targets other than int64 class indices (class probabilities)");
  if (lowering.val(*target).input < 0) return std::unexpected("class indices computed in the program");
  if (log_softmax && number(args, "label_smoothing").value_or(1) != 0) return std::unexpected("label smoothing");
  std::vector<int64_t> shape = lowering.val(*self).shape;
  if (shape.size() < 2) return std::unexpected("input of rank under 2 (no batch dim)");
  const int64_t classes = shape[1];
  shape.erase(shape.begin() + 1);
  if (lowering.val(*target).shape != shape) return std::unexpected("target of another shape than the input's rows");
  const Json& ignore_arg = args.at("ignore_index");
  if (!ignore_arg.is_number_integer()) return std::unexpected("argument 'ignore_index' is not an int literal");
  const std::string ignore = std::to_string(ignore_arg.get<int64_t>()) + "LL";
  // The class of element i of the target, 0 where it is ignored, so that no read leaves the tensor.
  const std::string t = "B.p" + std::to_string(*target) + "[i]";
  const std::string cls = "(" + t + " == " + ignore + " ? 0LL : " + t + ")";
  auto gathered = [&](int src, std::vector<std::string> source) {
    Val val;
    val.kind = ValKind::indexed;
    val.shape = shape;
    val.args = {src};
    val.source = std::move(source);
    return lowering.add(std::move(val));
  };
  std::vector<std::string> picked_at = {"c0", cls};
  for (size_t d = 1; d < shape.size(); ++d) picked_at.push_back("c" + std::to_string(d));
  if (*weight >= 0 && lowering.val(*weight).shape != std::vector<int64_t>{classes})
    return std::unexpected("weight of another size than the classes");
  const int picked = gathered(*self, picked_at);
  const int per_class = *weight >= 0 ? gathered(*weight, {cls}) : -1;
  // $0 the picked value, $1 the target, then logsumexp and the weight where there are
  std::vector<int> operands = {picked, *target};
  std::string value = "(-$0)";
  if (log_softmax) {
    auto lse = reduce_val(lowering, *self, {1}, false, "logsumexp");
    if (!lse) return std::unexpected(lse.error());
    value = "($" + std::to_string(operands.size()) + " - $0)";
    operands.push_back(*lse);
  }
  std::string w = "1.f";
  if (per_class >= 0) {
    w = "$" + std::to_string(operands.size());
    operands.push_back(per_class);
  }
  const std::string ignored = "($1 == (float)" + ignore + ")";
  auto loss = lowering.pointwise("(" + ignored + " ? 0.f : " + w + " * " + value + ")", operands);
  if (!loss) return std::unexpected(loss.error());
  const Json& reduction = args.at("reduction");
  if (reduction != 1) return bind_output(lowering, node, reduced(lowering, *loss, args));
  // mean: over the weights of the elements not ignored
  auto weights = lowering.pointwise("(" + ignored + " ? 0.f : " + w + ")", operands);
  if (!weights) return std::unexpected(weights.error());
  auto total = reduce_val(lowering, *loss, {}, false, "sum");
  auto total_weight = reduce_val(lowering, *weights, {}, false, "sum");
  if (!total || !total_weight) return std::unexpected(!total ? total.error() : total_weight.error());
  return bind_output(lowering, node, lowering.pointwise("($0 / $1)", {*total, *total_weight}));
}

Result dist(Lowering& lowering, const Json& args, const Node& node) {
  auto ids = tensors(lowering, args, {"self", "other"});
  auto p = number(args, "p");
  if (!ids || !p) return std::unexpected(!ids ? ids.error() : p.error());
  auto diff = lowering.pointwise("($0 - $1)", *ids);
  if (!diff) return std::unexpected(diff.error());
  return bind_output(lowering, node, reduce_val(lowering, *diff, {}, false, "norm", *p));
}

}  // namespace

void register_loss_ops(std::map<std::string, OpEntry>& t) {
  t["aten::mse_loss"] = elementwise_loss("aten::mse_loss(Tensor self, Tensor target, int reduction=1) -> Tensor",
                                         {"self", "target"}, "(($0 - $1) * ($0 - $1))");
  t["aten::l1_loss"] = elementwise_loss("aten::l1_loss(Tensor self, Tensor target, int reduction=1) -> Tensor",
                                        {"self", "target"}, "fabsf($0 - $1)");
  t["aten::smooth_l1_loss"] = {
      "aten::smooth_l1_loss(Tensor self, Tensor target, int reduction=1, float beta=1.) -> Tensor", smooth_l1};
  t["aten::huber_loss"] = elementwise_loss(
      "aten::huber_loss(Tensor self, Tensor target, int reduction=1, float delta=1.) -> Tensor", {"self", "target"},
      "(fabsf($0 - $1) < {delta} ? 0.5f * ($0 - $1) * ($0 - $1) : {delta} * (fabsf($0 - $1) - 0.5f * {delta}))",
      {"delta"});
  t["aten::kl_div"] = {"aten::kl_div(Tensor self, Tensor target, int reduction=1, *, bool log_target=False) -> Tensor",
                       kl_div};
  t["aten::soft_margin_loss"] =
      elementwise_loss("aten::soft_margin_loss(Tensor self, Tensor target, int reduction=1) -> Tensor",
                       {"self", "target"}, "log1pf(expf(-$0 * $1))");
  t["aten::binary_cross_entropy"] = {
      "aten::binary_cross_entropy(Tensor self, Tensor target, Tensor? weight=None, int reduction=1) -> Tensor", bce};
  t["aten::binary_cross_entropy_with_logits"] = {
      "aten::binary_cross_entropy_with_logits(Tensor self, Tensor target, Tensor? weight=None, Tensor? "
      "pos_weight=None, int reduction=1) -> Tensor",
      bce_with_logits};
  t["aten::hinge_embedding_loss"] = elementwise_loss(
      "aten::hinge_embedding_loss(Tensor self, Tensor target, float margin=1., int reduction=1) -> Tensor",
      {"self", "target"}, "(($1 != 1.f ? " + relu_of("({margin} - $0)") + " : 0.f) + ($1 != -1.f ? $0 : 0.f))",
      {"margin"});
  t["aten::margin_ranking_loss"] = elementwise_loss(
      "aten::margin_ranking_loss(Tensor input1, Tensor input2, Tensor target, float margin=0., int reduction=1) -> "
      "Tensor",
      {"input1", "input2", "target"}, relu_of("(-$2 * ($0 - $1) + {margin})"), {"margin"});
  t["aten::poisson_nll_loss"] = {
      "aten::poisson_nll_loss(Tensor input, Tensor target, bool log_input, bool full, float eps, int reduction) -> "
      "Tensor",
      poisson_nll};
  t["aten::pairwise_distance"] = {
      "aten::pairwise_distance(Tensor x1, Tensor x2, float p=2., float eps=9.9999999999999995e-07, bool "
      "keepdim=False) -> Tensor",
      pairwise_distance_op};
  t["aten::triplet_margin_loss"] = {
      "aten::triplet_margin_loss(Tensor anchor, Tensor positive, Tensor negative, float margin=1., float p=2., float "
      "eps=9.9999999999999995e-07, bool swap=False, int reduction=1) -> Tensor",
      triplet_margin};
  t["aten::cosine_similarity"] = {"aten::cosine_similarity(Tensor x1, Tensor x2, int dim=1, float eps=1e-08) -> Tensor",
                                  cosine_similarity};
  t["aten::cosine_embedding_loss"] = {
      "aten::cosine_embedding_loss(Tensor input1, Tensor input2, Tensor target, float margin=0., int reduction=1) -> "
      "Tensor",
      cosine_embedding};
  t["aten::dist"] = {"aten::dist(Tensor self, Tensor other, Scalar p=2) -> Tensor", dist};
  t["aten::cross_entropy_loss"] = {
      "aten::cross_entropy_loss(Tensor self, Tensor target, Tensor? weight=None, int "
      "reduction=1, SymInt ignore_index=-100, float label_smoothing=0.) -> Tensor",
      [](Lowering& lowering, const Json& args, const Node& node) { return class_loss(lowering, args, node, true); }};
  for (const char* name : {"nll_loss", "nll_loss_nd", "nll_loss2d"}) {
    t[std::string("aten::") + name] = {
        std::string("aten::") + name +
            "(Tensor self, Tensor target, Tensor? weight=None, int reduction=1, SymInt "
            "ignore_index=-100) -> Tensor",
        [](Lowering& lowering, const Json& args, const Node& node) { return class_loss(lowering, args, node, false); }};
  }
}

}  // namespace ca::builtin
