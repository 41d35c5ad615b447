// The op table and the Lowering the handlers work through.
#include "policy/builtin/ops.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "policy/builtin/ops_util.h"

namespace ca::builtin {

int64_t Val::numel() const {
  return product(shape, 0, shape.size());
}

std::string float_literal(double value) {
  if (std::isinf(value)) return value > 0 ? "INFINITY" : "(-INFINITY)";
  if (std::isnan(value)) return "NAN";
  char text[64];
  std::snprintf(text, sizeof text, "%.9e", value);
  return std::string("(") + text + "f)";
}

std::expected<int, std::string> Lowering::tensor(const Json& arg) const {
  auto ref = parse_ref(arg);
  if (!ref) return std::unexpected("expected a tensor, got " + arg.dump());
  std::string name = ref->index ? ref->name + "[" + std::to_string(*ref->index) + "]" : ref->name;
  if (auto it = m_unusable.find(name); it != m_unusable.end()) return std::unexpected(it->second);
  auto it = m_names.find(name);
  if (it == m_names.end()) return std::unexpected("reads '" + name + "', which the writer did not cover");
  return it->second;
}

std::expected<int, std::string> Lowering::operand(const Json& arg) const {
  auto ref = parse_ref(arg);
  if (!ref) return tensor(arg);
  std::string name = ref->index ? ref->name + "[" + std::to_string(*ref->index) + "]" : ref->name;
  if (m_operand_only.contains(name)) return m_names.at(name);
  return tensor(arg);
}

std::expected<int, std::string> Lowering::output(const Json& arg) const {
  auto id = operand(arg);
  if (!id) return id;
  const Val& val = m_plan.vals[*id];
  if (val.dtype == 0) return id;
  if (val.input >= 0) return tensor(arg);  // its own refusal
  if (val.dtype == static_cast<int>(DType::boolean)) return id;
  if (val.output >= 0 || val.kind != ValKind::buffer) return std::unexpected("an int64 value output twice");
  return id;
}

std::expected<int, std::string> Lowering::optional_tensor(const Json& arg) const {
  if (arg.is_null()) return -1;
  return tensor(arg);
}

int Lowering::add(Val val) {
  val.node = node;
  m_plan.vals.push_back(std::move(val));
  return static_cast<int>(m_plan.vals.size()) - 1;
}

void Lowering::add_step(Step step) {
  step.node = node;
  m_plan.steps.push_back(std::move(step));
}

void Lowering::note_pattern(const std::string& pattern) {
  for (const std::string& seen : m_plan.patterns) {
    if (seen == pattern) return;
  }
  m_plan.patterns.push_back(pattern);
}

std::expected<int, std::string> Lowering::pointwise(std::string expr, std::vector<int> args, Operands rule) {
  auto is_float = [&](int arg) {
    const int dtype = m_plan.vals[arg].dtype;
    return dtype == 0 || (rule == Operands::bools_exact && dtype == static_cast<int>(DType::boolean));
  };
  if (rule != Operands::promoted && !args.empty() && std::ranges::none_of(args, is_float)) {
    const Val& val = m_plan.vals[args[0]];
    return std::unexpected("reads " + std::string(dtype_name(static_cast<DType>(val.dtype))) + " value " +
                           std::to_string(args[0]) + " with no float32 operand beside it");
  }
  std::vector<int64_t> shape;
  for (int arg : args) {
    const std::vector<int64_t>& other = m_plan.vals[arg].shape;
    std::vector<int64_t> merged(std::max(shape.size(), other.size()), 1);
    for (size_t i = 0; i < merged.size(); ++i) {
      int64_t a = i < shape.size() ? shape[shape.size() - 1 - i] : 1;
      int64_t b = i < other.size() ? other[other.size() - 1 - i] : 1;
      if (a != b && a != 1 && b != 1) return std::unexpected("shapes do not broadcast");
      merged[merged.size() - 1 - i] = a == 1 ? b : a;
    }
    shape = std::move(merged);
  }
  Val val;
  val.kind = ValKind::pointwise;
  val.shape = std::move(shape);
  val.expr = std::move(expr);
  val.args = std::move(args);
  val.align.assign(val.args.size(), -1);
  note_pattern("elementwise");
  return add(std::move(val));
}

const std::map<std::string, OpEntry>& op_table() {
  static const std::map<std::string, OpEntry> table = [] {
    std::map<std::string, OpEntry> entries;
    register_pointwise_ops(entries);
    register_view_ops(entries);
    register_reduction_ops(entries);
    register_norm_ops(entries);
    register_matmul_ops(entries);
    register_window_ops(entries);
    register_gather_ops(entries);
    register_loss_ops(entries);
    register_compare_ops(entries);
    // Other names of covered ops whose arguments have the same names.
    const std::pair<const char*, const char*> aliases[] = {
        {"aten::linalg_matmul", "aten::matmul"},
        {"aten::special_softmax", "aten::softmax.int"},
        {"aten::view_copy", "aten::view"},
        {"aten::unsqueeze_copy", "aten::unsqueeze"},
        {"aten::squeeze_copy", "aten::squeeze"},
        {"aten::squeeze_copy.dim", "aten::squeeze.dim"},
        {"aten::squeeze_copy.dims", "aten::squeeze.dims"},
        {"aten::permute_copy", "aten::permute"},
        {"aten::transpose_copy.int", "aten::transpose.int"},
        {"aten::swapdims", "aten::transpose.int"},
        {"aten::alias", "aten::contiguous"},
        {"aten::detach", "aten::contiguous"},
        {"aten::multiply.Tensor", "aten::mul.Tensor"},
        {"aten::multiply.Scalar", "aten::mul.Scalar"},
        {"aten::subtract.Tensor", "aten::sub.Tensor"},
        {"aten::subtract.Scalar", "aten::sub.Scalar"},
        {"aten::divide.Tensor", "aten::div.Tensor"},
        {"aten::divide.Scalar", "aten::div.Scalar"},
        {"aten::true_divide.Tensor", "aten::div.Tensor"},
        {"aten::true_divide.Scalar", "aten::div.Scalar"},
        {"aten::divide.Tensor_mode", "aten::div.Tensor_mode"},
        {"aten::divide.Scalar_mode", "aten::div.Scalar_mode"},
        {"aten::negative", "aten::neg"},
        {"aten::special_i0", "aten::i0"},
        {"aten::special_modified_bessel_i0", "aten::i0"},
        {"aten::special_modified_bessel_i1", "aten::special_i1"},
        {"aten::special_digamma", "aten::digamma"},
        {"aten::special_psi", "aten::digamma"},
        {"aten::special_gammaln", "aten::lgamma"},
        {"aten::absolute", "aten::abs"},
        {"aten::fix", "aten::trunc"},
        {"aten::clip", "aten::clamp"},
        {"aten::clip.Tensor", "aten::clamp.Tensor"},
        {"aten::special_log_softmax", "aten::log_softmax.int"},
        {"aten::slice_copy.Tensor", "aten::slice.Tensor"},
        {"aten::select_copy.int", "aten::select.int"},
        {"aten::narrow_copy", "aten::narrow"},
        {"aten::broadcast_to", "aten::expand"},
        // The identity on a real float32 tensor (the writer refuses other dtypes where they are read).
        {"aten::positive", "aten::contiguous"},
        {"aten::conj_physical", "aten::contiguous"},
        {"aten::resolve_conj", "aten::contiguous"},
        {"aten::real", "aten::contiguous"},
        {"aten::detach_copy", "aten::contiguous"},
        {"aten::lift", "aten::contiguous"},
        {"aten::lift_fresh", "aten::contiguous"},
        {"aten::lift_fresh_copy", "aten::contiguous"},
    };
    for (const auto& [alias, name] : aliases) {
      OpEntry entry = entries.at(name);
      std::string schema = entry.schema;
      size_t paren = schema.find('(');
      entry.schema = std::string(alias) + schema.substr(paren);
      entries[alias] = std::move(entry);
    }
    return entries;
  }();
  return table;
}

std::expected<double, std::string> number(const Json& args, const std::string& name) {
  const Json& value = args.at(name);
  if (value.is_boolean()) return value.get<bool>() ? 1.0 : 0.0;
  if (auto special = parse_special_float(value)) return *special;
  if (!value.is_number()) return std::unexpected("argument '" + name + "' is not a number literal");
  return value.get<double>();
}

std::expected<std::vector<int>, std::string> operands(Lowering& lowering, const Json& args,
                                                      const std::vector<std::string>& names) {
  std::vector<int> ids;
  for (const std::string& name : names) {
    auto id = lowering.operand(args.at(name));
    if (!id) return std::unexpected(id.error());
    ids.push_back(*id);
  }
  return ids;
}

std::expected<std::vector<int64_t>, std::string> int_list(const Json& args, const std::string& name, size_t length) {
  const Json& value = args.at(name);
  if (value.is_number_integer()) return std::vector<int64_t>(length, value.get<int64_t>());
  if (!value.is_array()) return std::unexpected("argument '" + name + "' is not an int list literal");
  std::vector<int64_t> list;
  for (const Json& item : value) {
    if (!item.is_number_integer()) return std::unexpected("argument '" + name + "' is not an int list literal");
    list.push_back(item.get<int64_t>());
  }
  return list;
}

int permute_view(Lowering& lowering, int src, const std::vector<int>& perm) {
  Val val;
  val.kind = ValKind::permute;
  val.args = {src};
  val.perm = perm;
  for (int d : perm) val.shape.push_back(lowering.val(src).shape[d]);
  return lowering.add(std::move(val));
}

std::expected<int, std::string> wrap_dim(int64_t dim, size_t rank) {
  int64_t r = std::max<int64_t>(static_cast<int64_t>(rank), 1);
  if (dim < -r || dim >= r) return std::unexpected("dim " + std::to_string(dim) + " out of range");
  return static_cast<int>(dim < 0 ? dim + r : dim);
}

int64_t product(const std::vector<int64_t>& shape, size_t begin, size_t end) {
  int64_t result = 1;
  for (size_t i = begin; i < end && i < shape.size(); ++i) result *= shape[i];
  return result;
}

std::expected<void, std::string> float32_only(const Json& args, const std::string& name) {
  const Json& value = args.at(name);
  if (value.is_null() || value == "float32") return {};
  return std::unexpected("dtype " + value.dump() + ": the writer computes in float32 only");
}

}  // namespace ca::builtin
