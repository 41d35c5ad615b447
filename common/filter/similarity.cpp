#include "filter/similarity.h"

#include <algorithm>
#include <map>

#include "ir/dtype.h"

namespace ca {
namespace {

// Ops that only change a tensor's view, layout or dtype, or copy it.
const std::set<std::string, std::less<>> k_dropped = {
    "view",        "reshape",         "unsafe_view",    "permute",      "transpose",
    "t",           "squeeze",         "unsqueeze",      "expand",       "expand_as",
    "flatten",     "unflatten",       "contiguous",     "clone",        "alias",
    "detach",      "lift_fresh_copy", "lift_fresh",     "to",           "to_copy",
    "type_as",     "view_as",         "reshape_as",     "broadcast_to", "copy",
    "view_copy",   "permute_copy",    "transpose_copy", "squeeze_copy", "unsqueeze_copy",
    "expand_copy", "alias_copy",      "reshape_alias",  "numpy_T",      "mT",
    "swapaxes",    "swapdims",        "movedim",        "moveaxis"};

const std::map<std::string, std::string, std::less<>> k_synonyms = {
    {"mm", "matmul"},
    {"bmm", "matmul"},
    {"addmm", "linear"},
    {"true_divide", "div"},
    {"divide", "div"},
    {"multiply", "mul"},
    {"subtract", "sub"},
    {"rsub", "sub"},
    {"clip", "clamp"},
    {"clamp_min", "clamp"},
    {"clamp_max", "clamp"},
    {"amax", "max"},
    {"amin", "min"},
    {"maximum", "max"},
    {"minimum", "min"},
    {"native_layer_norm", "layer_norm"},
    {"native_group_norm", "group_norm"},
    {"native_batch_norm", "batch_norm"},
    {"native_batch_norm_legit_no_training", "batch_norm"},
    {"native_batch_norm_legit", "batch_norm"},
    {"convolution", "conv"},
    {"conv1d", "conv"},
    {"conv2d", "conv"},
    {"conv3d", "conv"},
    {"conv_transpose1d", "conv_transpose"},
    {"conv_transpose2d", "conv_transpose"},
    {"conv_transpose3d", "conv_transpose"},
    {"special_expit", "sigmoid"},
    {"absolute", "abs"},
    {"arctan", "atan"},
    {"greater", "gt"},
    {"less", "lt"},
};

}  // namespace

std::string normalize_op(std::string_view qualified) {
  auto [name, overload] = split_op_name(qualified);
  std::string_view base = name;
  if (auto colons = base.find("::"); colons != std::string_view::npos) base.remove_prefix(colons + 2);
  while (base.starts_with('_')) base.remove_prefix(1);
  if (k_dropped.contains(base)) return "";
  if (auto synonym = k_synonyms.find(base); synonym != k_synonyms.end()) return synonym->second;
  return std::string(base);
}

std::vector<std::string> normalized_ops(const Program& program) {
  std::vector<std::string> ops;
  for (const auto& node : program.nodes) {
    std::string op = normalize_op(node.qualified_name());
    if (!op.empty()) ops.push_back(std::move(op));
  }
  return ops;
}

std::string join_ops(const std::vector<std::string>& ops) {
  std::string text;
  for (const auto& op : ops) text += (text.empty() ? "" : " ") + op;
  return text;
}

std::set<std::string> op_shingles(const std::vector<std::string>& ops) {
  std::vector<std::string> framed = {"^"};
  framed.insert(framed.end(), ops.begin(), ops.end());
  framed.push_back("$");
  std::set<std::string> shingles;
  if (framed.size() < 3) {
    shingles.insert(join_ops(framed));
    return shingles;
  }
  for (size_t i = 0; i + 3 <= framed.size(); ++i)
    shingles.insert(framed[i] + " " + framed[i + 1] + " " + framed[i + 2]);
  return shingles;
}

double jaccard(const std::set<std::string>& a, const std::set<std::string>& b) {
  if (a.empty() && b.empty()) return 1.0;
  size_t common = 0;
  for (const auto& item : a) common += b.contains(item) ? 1 : 0;
  return double(common) / double(a.size() + b.size() - common);
}

std::string near_duplicate_key(const Program& program) {
  std::string key = join_ops(normalized_ops(program)) + " |";
  for (const auto* list : {&program.inputs, &program.params}) {
    for (const auto& spec : *list) {
      key += " " + std::string(dtype_name(spec.dtype)) + "[";
      for (size_t d = 0; d < spec.shape.size(); ++d) key += (d ? "," : "") + std::to_string(spec.shape[d]);
      key += "]";
    }
    key += " ;";
  }
  return key;
}

void ReferenceSet::add(std::string id, const Program& program) {
  auto ops = normalized_ops(program);
  m_entries.push_back({std::move(id), join_ops(ops), op_shingles(ops)});
}

std::optional<ReferenceSet::Match> ReferenceSet::best_match(const Program& program) const {
  if (m_entries.empty()) return std::nullopt;
  auto shingles = op_shingles(normalized_ops(program));
  Match best;
  best.similarity = -1;
  for (const auto& entry : m_entries) {
    double similarity = jaccard(shingles, entry.shingles);
    if (similarity > best.similarity) best = {entry.id, similarity, entry.ops};
  }
  return best;
}

}  // namespace ca
