// Comparisons, tests and logical ops (bool values), and the ops that select by a bool (where, masked_fill).
//
// A bool value is computed as a float 0 or 1 (exact), stored as one byte where it is an output, and read only as an
// operand: by a select, a logical op, arithmetic beside a float32 operand (where type promotion makes it float32), or a
// unary op that promotes it to float (exp).
#include "policy/builtin/ops_util.h"

namespace ca::builtin {
namespace {

using Result = std::expected<void, std::string>;

// Binds node's output to bool value `id`, which only an operand may read.
Result bind_bool(Lowering& lowering, const Node& node, std::expected<int, std::string> id) {
  if (!id) return std::unexpected(id.error());
  lowering.set_dtype(*id, DType::boolean);
  lowering.bind(node.outputs[0], *id);
  lowering.operand_only(node.outputs[0], "reads a bool value, which the writer reads only as an operand");
  return {};
}

// An op with a bool result: its tensor args feed `expr` as $0, $1, ..., its scalar args fill {name}s. Operands are
// float32 or bool (an integer input only beside a float32 one): the comparison is then exact as ATen's.
OpEntry bool_op(std::string schema, std::vector<std::string> tensors, std::string expr,
                std::vector<std::string> scalars = {}) {
  OpHandler handler = [tensors, expr, scalars](Lowering& lowering, const Json& args, const Node& node) -> Result {
    auto ids = operands(lowering, args, tensors);
    if (!ids) return std::unexpected(ids.error());
    auto filled = with_scalars(expr, args, scalars);
    if (!filled) return std::unexpected(filled.error());
    return bind_bool(lowering, node, lowering.pointwise(*filled, *ids, Operands::bools_exact));
  };
  return {std::move(schema), std::move(handler)};
}

// A select whose result is float32, by bool operand `cond`: of `values` (tensor arg names), the first must be float32
// where `first_decides` (masked_fill keeps self's dtype), any where not (where() promotes its two values).
OpEntry select_op(std::string schema, std::string cond, std::vector<std::string> values, std::string expr,
                  std::vector<std::string> scalars = {}, bool first_decides = false) {
  OpHandler handler = [=](Lowering& lowering, const Json& args, const Node& node) -> Result {
    auto selector = lowering.operand(args.at(cond));
    if (!selector) return std::unexpected(selector.error());
    if (lowering.val(*selector).dtype != static_cast<int>(DType::boolean))
      return std::unexpected("'" + cond + "' is not bool");
    auto ids = operands(lowering, args, values);
    if (!ids) return std::unexpected(ids.error());
    auto is_float = [&](int id) { return lowering.val(id).dtype == 0; };
    const bool any_float =
        first_decides ? !ids->empty() && is_float(ids->front()) : std::ranges::any_of(*ids, is_float);
    // Two scalars: an integer pair makes an int64 result.
    const bool float_scalar = std::ranges::any_of(scalars, [&](const std::string& name) {
      return args.at(name).is_number_float() || parse_special_float(args.at(name));
    });
    if (!any_float && !(ids->empty() && float_scalar)) return std::unexpected("the selected values are not float32");
    auto filled = with_scalars(expr, args, scalars);
    if (!filled) return std::unexpected(filled.error());
    ids->insert(ids->begin(), *selector);
    auto out = lowering.pointwise(*filled, *ids, Operands::bools_exact);
    if (!out) return std::unexpected(out.error());
    lowering.bind(node.outputs[0], *out);
    return {};
  };
  return {std::move(schema), std::move(handler)};
}

}  // namespace

void register_compare_ops(std::map<std::string, OpEntry>& t) {
  const std::pair<const char*, const char*> comparisons[] = {{"eq", "=="}, {"ne", "!="}, {"lt", "<"},
                                                             {"le", "<="}, {"gt", ">"},  {"ge", ">="}};
  for (const auto& [name, op] : comparisons) {
    const std::string qualified = "aten::" + std::string(name);
    t[qualified + ".Tensor"] = bool_op(qualified + ".Tensor(Tensor self, Tensor other) -> Tensor", {"self", "other"},
                                       "(float)($0 " + std::string(op) + " $1)");
    t[qualified + ".Scalar"] = bool_op(qualified + ".Scalar(Tensor self, Scalar other) -> Tensor", {"self"},
                                       "(float)($0 " + std::string(op) + " {other})", {"other"});
  }
  const std::pair<const char*, const char*> tests[] = {
      {"isnan", "(float)($0 != $0)"},           {"isinf", "(float)(fabsf($0) == INFINITY)"},
      {"isfinite", "(float)($0 - $0 == 0.f)"},  {"isposinf", "(float)($0 == INFINITY)"},
      {"isneginf", "(float)($0 == -INFINITY)"}, {"signbit", "(float)(signbit($0) != 0)"},
      {"logical_not", "(float)($0 == 0.f)"}};
  for (const auto& [name, expr] : tests)
    t["aten::" + std::string(name)] = bool_op("aten::" + std::string(name) + "(Tensor self) -> Tensor", {"self"}, expr);
  // NaN is true, as in ATen: only zero is false.
  const std::pair<const char*, const char*> logical[] = {{"logical_and", "(float)($0 != 0.f && $1 != 0.f)"},
                                                         {"logical_or", "(float)($0 != 0.f || $1 != 0.f)"},
                                                         {"logical_xor", "(float)(($0 != 0.f) != ($1 != 0.f))"}};
  for (const auto& [name, expr] : logical)
    t["aten::" + std::string(name)] =
        bool_op("aten::" + std::string(name) + "(Tensor self, Tensor other) -> Tensor", {"self", "other"}, expr);

  t["aten::where.self"] = select_op("aten::where.self(Tensor condition, Tensor self, Tensor other) -> Tensor",
                                    "condition", {"self", "other"}, "($0 != 0.f ? $1 : $2)");
  t["aten::where.ScalarSelf"] =
      select_op("aten::where.ScalarSelf(Tensor condition, Scalar self, Tensor other) -> Tensor", "condition", {"other"},
                "($0 != 0.f ? {self} : $1)", {"self"});
  t["aten::where.ScalarOther"] =
      select_op("aten::where.ScalarOther(Tensor condition, Tensor self, Scalar other) -> Tensor", "condition", {"self"},
                "($0 != 0.f ? $1 : {other})", {"other"});
  t["aten::where.Scalar"] = select_op("aten::where.Scalar(Tensor condition, Scalar self, Scalar other) -> Tensor",
                                      "condition", {}, "($0 != 0.f ? {self} : {other})", {"self", "other"});
  t["aten::masked_fill.Scalar"] =
      select_op("aten::masked_fill.Scalar(Tensor self, Tensor mask, Scalar value) -> Tensor", "mask", {"self"},
                "($0 != 0.f ? {value} : $1)", {"value"}, true);
  t["aten::masked_fill.Tensor"] =
      select_op("aten::masked_fill.Tensor(Tensor self, Tensor mask, Tensor value) -> Tensor", "mask", {"self", "value"},
                "($0 != 0.f ? $2 : $1)", {}, true);
}

}  // namespace ca::builtin
