// Pointwise ops (activations, arithmetic with broadcasting and scalar args) and views (reshape, permute).
#include <cmath>
#include <set>

#include "policy/builtin/emit_util.h"
#include "policy/builtin/ops_util.h"

namespace ca::builtin {

std::expected<std::string, std::string> with_scalars(std::string expr, const Json& args,
                                                     const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    auto value = number(args, name);
    if (!value) return std::unexpected(value.error());
    expr = replace_all(expr, "{" + name + "}", float_literal(*value));
  }
  return expr;
}

namespace {

using Result = std::expected<void, std::string>;

// An op whose tensor args (by schema name) feed `expr` as $0, $1, ... and whose scalar args fill {name}s.
OpEntry pointwise_op(std::string schema, std::vector<std::string> tensors, std::string expr,
                     std::vector<std::string> scalars = {}, Operands rule = Operands::float_beside) {
  OpHandler handler = [=](Lowering& lowering, const Json& args, const Node& node) -> Result {
    auto ids = operands(lowering, args, tensors);
    if (!ids) return std::unexpected(ids.error());
    auto filled = with_scalars(expr, args, scalars);
    if (!filled) return std::unexpected(filled.error());
    auto out = lowering.pointwise(*filled, *ids, rule);
    if (!out) return std::unexpected(out.error());
    lowering.bind(node.outputs[0], *out);
    return {};
  };
  return {std::move(schema), std::move(handler)};
}

// The unary ops that make an integer or bool tensor float32 (ATen's int-to-float promotion: exp(x > 0) is a float
// tensor of 1 and e); the others (abs, neg, relu, floor, ...) keep the integer dtype, so they need a float32 operand.
bool promotes_to_float(const std::string& name) {
  static const std::set<std::string> names = {
      "exp",        "exp2", "expm1",  "log",   "log2",    "log10",       "log1p",      "sqrt",
      "rsqrt",      "sin",  "cos",    "tan",   "tanh",    "asin",        "acos",       "atan",
      "sinh",       "cosh", "asinh",  "acosh", "atanh",   "erf",         "erfc",       "sigmoid",
      "reciprocal", "sinc", "lgamma", "i0",    "digamma", "special_i0e", "special_i1", "special_i1e"};
  return names.contains(name);
}

OpEntry unary(const std::string& name, const std::string& expr) {
  return pointwise_op("aten::" + name + "(Tensor self) -> Tensor", {"self"}, expr, {},
                      promotes_to_float(name) ? Operands::promoted : Operands::float_beside);
}

// pow with a literal exponent: small integer powers as products, as ATen does.
std::string pow_expr(double exponent) {
  if (exponent == 1) return "$0";
  if (exponent == 2) return "($0 * $0)";
  if (exponent == 3) return "($0 * $0 * $0)";
  if (exponent == 0.5) return "sqrtf($0)";
  if (exponent == -1) return "(1.f / $0)";
  if (exponent == -2) return "(1.f / ($0 * $0))";
  if (exponent == -0.5) return "(1.f / sqrtf($0))";
  if (exponent == 0) return "1.f";
  return "powf($0, " + float_literal(exponent) + ")";
}

// clamp(min?, max?) with scalar or tensor bounds; a null bound is no bound.
OpHandler clamp_handler(bool tensor_bounds, const std::string& min_name, const std::string& max_name) {
  return [=](Lowering& lowering, const Json& args, const Node& node) -> Result {
    auto self = lowering.tensor(args.at("self"));
    if (!self) return std::unexpected(self.error());
    std::vector<int> ids = {*self};
    std::string expr = "$0";
    for (const auto& [name, fn] : {std::pair{min_name, "fmaxf"}, std::pair{max_name, "fminf"}}) {
      if (name.empty() || args.at(name).is_null()) continue;
      std::string bound;
      if (tensor_bounds) {
        auto id = lowering.tensor(args.at(name));
        if (!id) return std::unexpected(id.error());
        bound = "$" + std::to_string(ids.size());
        ids.push_back(*id);
      }
      if (!tensor_bounds) {
        auto value = number(args, name);
        if (!value) return std::unexpected(value.error());
        bound = float_literal(*value);
      }
      expr = std::string(fn) + "(" + expr + ", " + bound + ")";
    }
    auto out = lowering.pointwise(expr, ids);
    if (!out) return std::unexpected(out.error());
    lowering.bind(node.outputs[0], *out);
    return {};
  };
}

// A constant of self's shape; self is not read (zeros_like, ones_like, full_like).
Result filled(Lowering& lowering, const Json& args, const Node& node, double fill) {
  auto self = lowering.tensor(args.at("self"));
  if (!self) return std::unexpected(self.error());
  if (auto dtype = float32_only(args, "dtype"); !dtype) return std::unexpected(dtype.error());
  Val val;
  val.kind = ValKind::pointwise;
  val.shape = lowering.val(*self).shape;
  val.expr = float_literal(fill);
  lowering.bind(node.outputs[0], lowering.add(std::move(val)));
  return {};
}

}  // namespace

void register_pointwise_ops(std::map<std::string, OpEntry>& t) {
  // tril/triu: a pointwise value whose expression reads its own coordinates (c0, c1, ... of the value's shape, which
  // its evaluation function computes from the linear index).
  for (const std::string name : {"tril", "triu"}) {
    t["aten::" + name] = {
        "aten::" + name + "(Tensor self, int diagonal=0) -> Tensor",
        [name](Lowering& lowering, const Json& args, const Node& node) -> std::expected<void, std::string> {
          auto self = lowering.tensor(args.at("self"));
          if (!self) return std::unexpected(self.error());
          size_t rank = lowering.val(*self).shape.size();
          if (rank < 2) return std::unexpected(name + " of a tensor with fewer than 2 dims");
          std::string row = "c" + std::to_string(rank - 2), col = "c" + std::to_string(rank - 1);
          std::string keep = "(" + col + " - " + row + (name == "tril" ? " <= " : " >= ") +
                             std::to_string(args.at("diagonal").get<int64_t>()) + "LL)";
          auto out = lowering.pointwise("(" + keep + " ? $0 : 0.f)", {*self});
          if (!out) return std::unexpected(out.error());
          lowering.bind(node.outputs[0], *out);
          return {};
        }};
  }
  const std::pair<const char*, const char*> unaries[] = {
      {"abs", "fabsf($0)"},
      {"neg", "(-$0)"},
      {"exp", "expf($0)"},
      {"exp2", "exp2f($0)"},
      {"expm1", "expm1f($0)"},
      {"log", "logf($0)"},
      {"log2", "log2f($0)"},
      {"log10", "log10f($0)"},
      {"log1p", "log1pf($0)"},
      {"sqrt", "sqrtf($0)"},
      {"rsqrt", "(1.f / sqrtf($0))"},
      {"sin", "sinf($0)"},
      {"cos", "cosf($0)"},
      {"tan", "tanf($0)"},
      {"tanh", "tanhf($0)"},
      {"asin", "asinf($0)"},
      {"acos", "acosf($0)"},
      {"atan", "atanf($0)"},
      {"sinh", "sinhf($0)"},
      {"cosh", "coshf($0)"},
      {"asinh", "asinhf($0)"},
      {"acosh", "acoshf($0)"},
      {"atanh", "atanhf($0)"},
      {"erf", "erff($0)"},
      {"erfc", "erfcf($0)"},
      {"sigmoid", "(1.f / (1.f + expf(-$0)))"},
      {"relu", "($0 > 0.f ? $0 : 0.f)"},
      {"relu6", "fminf(fmaxf($0, 0.f), 6.f)"},
      {"silu", "($0 / (1.f + expf(-$0)))"},
      {"mish", "($0 * tanhf(log1pf(expf($0))))"},
      {"hardsigmoid", "(fminf(fmaxf($0 + 3.f, 0.f), 6.f) / 6.f)"},
      {"hardswish", "($0 * fminf(fmaxf($0 + 3.f, 0.f), 6.f) / 6.f)"},
      {"selu", "(1.0507009873554805f * ($0 > 0.f ? $0 : 1.6732632423543772f * expm1f($0)))"},
      {"square", "($0 * $0)"},
      {"reciprocal", "(1.f / $0)"},
      {"sign", "(float)(($0 > 0.f) - ($0 < 0.f))"},
      {"sgn", "(float)(($0 > 0.f) - ($0 < 0.f))"},
      {"floor", "floorf($0)"},
      {"ceil", "ceilf($0)"},
      {"round", "rintf($0)"},
      {"trunc", "truncf($0)"},
      {"frac", "($0 - truncf($0))"},
      {"log_sigmoid", "(fminf($0, 0.f) - log1pf(expf(-fabsf($0))))"},
      {"deg2rad", "($0 * 0.017453292519943295f)"},
      {"rad2deg", "($0 * 57.29577951308232f)"},
      {"sinc", "($0 == 0.f ? 1.f : sinf(3.14159265358979f * $0) / (3.14159265358979f * $0))"},
      {"lgamma", "lgammaf($0)"},
      {"angle", "($0 != $0 ? $0 : $0 < 0.f ? 3.14159265358979f : 0.f)"},  // of a real number
      // special functions the kernel defines where used (emit_util.h: special_functions)
      {"i0", "ca_i0($0)"},
      {"special_i0e", "ca_i0e($0)"},
      {"special_i1", "ca_i1($0)"},
      {"special_i1e", "ca_i1e($0)"},
      {"digamma", "ca_digamma($0)"},
  };
  for (const auto& [name, expr] : unaries) t["aten::" + std::string(name)] = unary(name, expr);

  t["aten::gelu"] = {"aten::gelu(Tensor self, *, str approximate=\"none\") -> Tensor",
                     [](Lowering& lowering, const Json& args, const Node& node) -> Result {
                       auto self = lowering.tensor(args.at("self"));
                       if (!self) return std::unexpected(self.error());
                       std::string mode =
                           args.at("approximate").is_string() ? args.at("approximate").get<std::string>() : "";
                       std::string expr;
                       if (mode == "none") expr = "(0.5f * $0 * (1.f + erff($0 * 0.70710678118654752f)))";
                       if (mode == "tanh") {
                         expr = "(0.5f * $0 * (1.f + tanhf(0.7978845608028654f * ($0 + 0.044715f * $0 * $0 * $0))))";
                       }
                       if (expr.empty()) return std::unexpected("gelu approximate=" + args.at("approximate").dump());
                       auto out = lowering.pointwise(expr, {*self});
                       if (!out) return std::unexpected(out.error());
                       lowering.bind(node.outputs[0], *out);
                       return {};
                     }};
  t["aten::elu"] = pointwise_op(
      "aten::elu(Tensor self, Scalar alpha=1, Scalar scale=1, Scalar input_scale=1) -> Tensor", {"self"},
      "($0 > 0.f ? $0 * {scale} : expm1f($0 * {input_scale}) * {alpha} * {scale})", {"alpha", "scale", "input_scale"});
  t["aten::celu"] = pointwise_op("aten::celu(Tensor self, Scalar alpha=1.) -> Tensor", {"self"},
                                 "(fmaxf($0, 0.f) + fminf(0.f, {alpha} * expm1f($0 / {alpha})))", {"alpha"});
  t["aten::leaky_relu"] = pointwise_op("aten::leaky_relu(Tensor self, Scalar negative_slope=0.01) -> Tensor", {"self"},
                                       "($0 > 0.f ? $0 : $0 * {negative_slope})", {"negative_slope"});
  t["aten::hardtanh"] = pointwise_op("aten::hardtanh(Tensor self, Scalar min_val=-1, Scalar max_val=1) -> Tensor",
                                     {"self"}, "fminf(fmaxf($0, {min_val}), {max_val})", {"min_val", "max_val"});
  t["aten::softplus"] =
      pointwise_op("aten::softplus(Tensor self, Scalar beta=1, Scalar threshold=20) -> Tensor", {"self"},
                   "($0 * {beta} > {threshold} ? $0 : log1pf(expf($0 * {beta})) / {beta})", {"beta", "threshold"});
  t["aten::hardshrink"] = pointwise_op("aten::hardshrink(Tensor self, Scalar lambd=0.5) -> Tensor", {"self"},
                                       "(($0 >= -{lambd} && $0 <= {lambd}) ? 0.f : $0)", {"lambd"});
  t["aten::softshrink"] =
      pointwise_op("aten::softshrink(Tensor self, Scalar lambd=0.5) -> Tensor", {"self"},
                   "($0 > {lambd} ? $0 - {lambd} : ($0 < -{lambd} ? $0 + {lambd} : 0.f))", {"lambd"});
  t["aten::threshold"] = pointwise_op("aten::threshold(Tensor self, Scalar threshold, Scalar value) -> Tensor",
                                      {"self"}, "($0 > {threshold} ? $0 : {value})", {"threshold", "value"});
  t["aten::clamp"] = {"aten::clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor",
                      clamp_handler(false, "min", "max")};
  t["aten::clamp.Tensor"] = {"aten::clamp.Tensor(Tensor self, Tensor? min=None, Tensor? max=None) -> Tensor",
                             clamp_handler(true, "min", "max")};
  t["aten::clamp_min"] = {"aten::clamp_min(Tensor self, Scalar min) -> Tensor", clamp_handler(false, "min", "")};
  t["aten::clamp_max"] = {"aten::clamp_max(Tensor self, Scalar max) -> Tensor", clamp_handler(false, "", "max")};
  t["aten::clamp_min.Tensor"] = {"aten::clamp_min.Tensor(Tensor self, Tensor min) -> Tensor",
                                 clamp_handler(true, "min", "")};
  t["aten::clamp_max.Tensor"] = {"aten::clamp_max.Tensor(Tensor self, Tensor max) -> Tensor",
                                 clamp_handler(true, "", "max")};
  t["aten::logit"] = {"aten::logit(Tensor self, float? eps=None) -> Tensor",
                      [](Lowering& lowering, const Json& args, const Node& node) -> Result {
                        auto self = lowering.tensor(args.at("self"));
                        if (!self) return std::unexpected(self.error());
                        std::string z = "$0";
                        if (!args.at("eps").is_null()) {
                          double eps = args.at("eps").get<double>();
                          z = "fminf(fmaxf($0, " + float_literal(eps) + "), " + float_literal(1 - eps) + ")";
                        }
                        auto out = lowering.pointwise("logf(" + z + " / (1.f - " + z + "))", {*self});
                        if (!out) return std::unexpected(out.error());
                        lowering.bind(node.outputs[0], *out);
                        return {};
                      }};
  t["aten::pow.Tensor_Scalar"] = {"aten::pow.Tensor_Scalar(Tensor self, Scalar exponent) -> Tensor",
                                  [](Lowering& lowering, const Json& args, const Node& node) -> Result {
                                    auto self = lowering.tensor(args.at("self"));
                                    auto exponent = number(args, "exponent");
                                    if (!self) return std::unexpected(self.error());
                                    if (!exponent) return std::unexpected(exponent.error());
                                    auto out = lowering.pointwise(pow_expr(*exponent), {*self});
                                    if (!out) return std::unexpected(out.error());
                                    lowering.bind(node.outputs[0], *out);
                                    return {};
                                  }};
  t["aten::pow.Tensor_Tensor"] = pointwise_op("aten::pow.Tensor_Tensor(Tensor self, Tensor exponent) -> Tensor",
                                              {"self", "exponent"}, "powf($0, $1)");
  t["aten::pow.Scalar"] = pointwise_op("aten::pow.Scalar(Scalar self, Tensor exponent) -> Tensor", {"exponent"},
                                       "powf({self}, $0)", {"self"});
  t["aten::add.Tensor"] = pointwise_op("aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
                                       {"self", "other"}, "($0 + {alpha} * $1)", {"alpha"});
  t["aten::add.Scalar"] = pointwise_op("aten::add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor",
                                       {"self"}, "($0 + {alpha} * {other})", {"other", "alpha"});
  t["aten::sub.Tensor"] = pointwise_op("aten::sub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
                                       {"self", "other"}, "($0 - {alpha} * $1)", {"alpha"});
  t["aten::sub.Scalar"] = pointwise_op("aten::sub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor",
                                       {"self"}, "($0 - {alpha} * {other})", {"other", "alpha"});
  t["aten::rsub.Tensor"] = pointwise_op("aten::rsub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
                                        {"self", "other"}, "($1 - {alpha} * $0)", {"alpha"});
  t["aten::rsub.Scalar"] = pointwise_op("aten::rsub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor",
                                        {"self"}, "({other} - {alpha} * $0)", {"other", "alpha"});
  t["aten::mul.Tensor"] =
      pointwise_op("aten::mul.Tensor(Tensor self, Tensor other) -> Tensor", {"self", "other"}, "($0 * $1)");
  t["aten::mul.Scalar"] =
      pointwise_op("aten::mul.Scalar(Tensor self, Scalar other) -> Tensor", {"self"}, "($0 * {other})", {"other"});
  t["aten::div.Tensor"] =
      pointwise_op("aten::div.Tensor(Tensor self, Tensor other) -> Tensor", {"self", "other"}, "($0 / $1)");
  t["aten::div.Scalar"] =
      pointwise_op("aten::div.Scalar(Tensor self, Scalar other) -> Tensor", {"self"}, "($0 / {other})", {"other"});
  for (const auto& [name, fn] :
       {std::pair{"maximum", "fmaxf"}, std::pair{"minimum", "fminf"}, std::pair{"fmax", "fmaxf"},
        std::pair{"fmin", "fminf"}, std::pair{"atan2", "atan2f"}}) {
    t["aten::" + std::string(name)] =
        pointwise_op("aten::" + std::string(name) + "(Tensor self, Tensor other) -> Tensor", {"self", "other"},
                     std::string(fn) + "($0, $1)");
  }
  for (const auto& [name, fn] :
       {std::pair{"copysign", "copysignf"}, std::pair{"hypot", "hypotf"}, std::pair{"fmod", "fmodf"}}) {
    t["aten::" + std::string(name) + ".Tensor"] =
        pointwise_op("aten::" + std::string(name) + ".Tensor(Tensor self, Tensor other) -> Tensor", {"self", "other"},
                     std::string(fn) + "($0, $1)");
    t["aten::" + std::string(name) + ".Scalar"] =
        pointwise_op("aten::" + std::string(name) + ".Scalar(Tensor self, Scalar other) -> Tensor", {"self"},
                     std::string(fn) + "($0, {other})", {"other"});
  }
  t["aten::ldexp.Tensor"] =
      pointwise_op("aten::ldexp.Tensor(Tensor self, Tensor other) -> Tensor", {"self", "other"}, "($0 * exp2f($1))");
  t["aten::nextafter"] =
      pointwise_op("aten::nextafter(Tensor self, Tensor other) -> Tensor", {"self", "other"}, "nextafterf($0, $1)");
  t["aten::hypot"] =
      pointwise_op("aten::hypot(Tensor self, Tensor other) -> Tensor", {"self", "other"}, "hypotf($0, $1)");
  t.erase("aten::hypot.Tensor");
  t.erase("aten::hypot.Scalar");
  // Python's modulo: the result takes the sign of the divisor.
  const std::string remainder =
      "(fmodf($0, $1) != 0.f && ((fmodf($0, $1) < 0.f) != ($1 < 0.f)) ? fmodf($0, $1) + $1 : fmodf($0, $1))";
  t["aten::remainder.Tensor"] =
      pointwise_op("aten::remainder.Tensor(Tensor self, Tensor other) -> Tensor", {"self", "other"}, remainder);
  t["aten::remainder.Scalar"] = pointwise_op("aten::remainder.Scalar(Tensor self, Scalar other) -> Tensor", {"self"},
                                             replace_all(remainder, "$1", "{other}"), {"other"});
  t["aten::remainder.Scalar_Tensor"] =
      pointwise_op("aten::remainder.Scalar_Tensor(Scalar self, Tensor other) -> Tensor", {"other"},
                   replace_all(replace_all(remainder, "$0", "{self}"), "$1", "$0"), {"self"});
  t["aten::logaddexp"] = pointwise_op("aten::logaddexp(Tensor self, Tensor other) -> Tensor", {"self", "other"},
                                      "(fmaxf($0, $1) + log1pf(expf(-fabsf($0 - $1))))");
  t["aten::logaddexp2"] = pointwise_op("aten::logaddexp2(Tensor self, Tensor other) -> Tensor", {"self", "other"},
                                       "(fmaxf($0, $1) + log1pf(exp2f(-fabsf($0 - $1))) * 1.44269504f)");
  t["aten::heaviside"] = pointwise_op("aten::heaviside(Tensor self, Tensor values) -> Tensor", {"self", "values"},
                                      "($0 == 0.f ? $1 : (float)($0 > 0.f))");
  // zeros_like, ones_like, full_like: a constant of self's shape (self is not read).
  const std::string like_options =
      "*, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, "
      "MemoryFormat? memory_format=None) -> Tensor";
  for (const auto& [name, fill] : {std::pair{"zeros_like", 0.0}, std::pair{"ones_like", 1.0}}) {
    t[std::string("aten::") + name] = {std::string("aten::") + name + "(Tensor self, " + like_options,
                                       [fill](Lowering& lowering, const Json& args, const Node& node) -> Result {
                                         return filled(lowering, args, node, fill);
                                       }};
  }
  t["aten::full_like"] = {"aten::full_like(Tensor self, Scalar fill_value, " + like_options,
                          [](Lowering& lowering, const Json& args, const Node& node) -> Result {
                            auto fill = number(args, "fill_value");
                            if (!fill) return std::unexpected(fill.error());
                            return filled(lowering, args, node, *fill);
                          }};
  t["aten::nan_to_num"] = {
      "aten::nan_to_num(Tensor self, float? nan=None, float? posinf=None, float? neginf=None) -> Tensor",
      [](Lowering& lowering, const Json& args, const Node& node) -> Result {
        auto self = lowering.tensor(args.at("self"));
        if (!self) return std::unexpected(self.error());
        auto value = [&](const char* name, double fallback) {
          return float_literal(args.at(name).is_null() ? fallback : args.at(name).get<double>());
        };
        std::string expr = "($0 != $0 ? " + value("nan", 0) + " : ($0 == INFINITY ? " +
                           value("posinf", 3.4028234663852886e38) + " : ($0 == -INFINITY ? " +
                           value("neginf", -3.4028234663852886e38) + " : $0)))";
        auto out = lowering.pointwise(expr, {*self});
        if (!out) return std::unexpected(out.error());
        lowering.bind(node.outputs[0], *out);
        return {};
      }};
  // div with rounding_mode None, "trunc" or "floor".
  auto div_mode = [](bool scalar) -> OpHandler {
    return [scalar](Lowering& lowering, const Json& args, const Node& node) -> Result {
      auto self = lowering.tensor(args.at("self"));
      if (!self) return std::unexpected(self.error());
      std::vector<int> ids = {*self};
      std::string divisor = "$1";
      if (scalar) {
        auto other = number(args, "other");
        if (!other) return std::unexpected(other.error());
        divisor = float_literal(*other);
      }
      if (!scalar) {
        auto other = lowering.tensor(args.at("other"));
        if (!other) return std::unexpected(other.error());
        ids.push_back(*other);
      }
      const Json& mode = args.at("rounding_mode");
      std::string quotient = "($0 / " + divisor + ")";
      std::string expr = mode.is_null()    ? quotient
                         : mode == "trunc" ? "truncf" + quotient
                         : mode == "floor" ? "floorf" + quotient
                                           : "";
      if (expr.empty()) return std::unexpected("rounding_mode " + mode.dump());
      auto out = lowering.pointwise(expr, ids);
      if (!out) return std::unexpected(out.error());
      lowering.bind(node.outputs[0], *out);
      return {};
    };
  };
  t["aten::div.Tensor_mode"] = {"aten::div.Tensor_mode(Tensor self, Tensor other, *, str? rounding_mode) -> Tensor",
                                div_mode(false)};
  t["aten::div.Scalar_mode"] = {"aten::div.Scalar_mode(Tensor self, Scalar other, *, str? rounding_mode) -> Tensor",
                                div_mode(true)};
  // prelu: one slope, or one per channel (dim 1).
  t["aten::prelu"] = {"aten::prelu(Tensor self, Tensor weight) -> Tensor",
                      [](Lowering& lowering, const Json& args, const Node& node) -> Result {
                        auto self = lowering.tensor(args.at("self"));
                        auto weight = lowering.tensor(args.at("weight"));
                        if (!self || !weight) return std::unexpected(!self ? self.error() : weight.error());
                        const Val& w = lowering.val(*weight);
                        const Val& x = lowering.val(*self);
                        if (w.shape.size() > 1) return std::unexpected("prelu weight with more than one dim");
                        bool per_channel = w.numel() > 1;
                        if (per_channel && (x.shape.size() < 2 || x.shape[1] != w.numel()))
                          return std::unexpected("prelu weight size");
                        Val val;
                        val.kind = ValKind::pointwise;
                        val.shape = x.shape;
                        val.expr = "($0 > 0.f ? $0 : $1 * $0)";
                        val.args = {*self, *weight};
                        val.align = {-1, per_channel ? 1 : -1};
                        lowering.note_pattern("elementwise");
                        lowering.bind(node.outputs[0], lowering.add(std::move(val)));
                        return {};
                      }};
  t["aten::max.other"] =
      pointwise_op("aten::max.other(Tensor self, Tensor other) -> Tensor", {"self", "other"}, "fmaxf($0, $1)");
  t["aten::min.other"] =
      pointwise_op("aten::min.other(Tensor self, Tensor other) -> Tensor", {"self", "other"}, "fminf($0, $1)");
  // lerp as ATen computes it: from the nearer end, so weight 1 gives `end` exactly.
  t["aten::lerp.Scalar"] = pointwise_op(
      "aten::lerp.Scalar(Tensor self, Tensor end, Scalar weight) -> Tensor", {"self", "end"},
      "(fabsf({weight}) < 0.5f ? $0 + {weight} * ($1 - $0) : $1 - ($1 - $0) * (1.f - {weight}))", {"weight"});
  t["aten::lerp.Tensor"] =
      pointwise_op("aten::lerp.Tensor(Tensor self, Tensor end, Tensor weight) -> Tensor", {"self", "end", "weight"},
                   "(fabsf($2) < 0.5f ? $0 + $2 * ($1 - $0) : $1 - ($1 - $0) * (1.f - $2))");
  t["aten::addcmul"] =
      pointwise_op("aten::addcmul(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor",
                   {"self", "tensor1", "tensor2"}, "($0 + {value} * $1 * $2)", {"value"});
  t["aten::addcdiv"] =
      pointwise_op("aten::addcdiv(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor",
                   {"self", "tensor1", "tensor2"}, "($0 + {value} * $1 / $2)", {"value"});
  t["aten::xlogy.Tensor"] = pointwise_op("aten::xlogy.Tensor(Tensor self, Tensor other) -> Tensor", {"self", "other"},
                                         "($1 != $1 ? $1 : ($0 == 0.f ? 0.f : $0 * logf($1)))");
  t["aten::xlogy.Scalar_Other"] =
      pointwise_op("aten::xlogy.Scalar_Other(Tensor self, Scalar other) -> Tensor", {"self"},
                   "({other} != {other} ? {other} : ($0 == 0.f ? 0.f : $0 * logf({other})))", {"other"});
}

}  // namespace ca::builtin
