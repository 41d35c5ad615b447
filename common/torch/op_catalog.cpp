#include "torch/op_catalog.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <map>

#include <ATen/core/dispatch/Dispatcher.h>

#include "ir/program.h"
#include "torch/convert.h"

namespace ca {
namespace {

using Names = std::vector<std::string_view>;

bool any_of(std::string_view base, const Names& names) {
  return std::find(names.begin(), names.end(), base) != names.end();
}
bool contains(std::string_view base, std::string_view part) {
  return base.find(part) != std::string_view::npos;
}
bool starts(std::string_view base, std::string_view prefix) {
  return base.starts_with(prefix);
}

const Names k_matmul = {"mm",
                        "bmm",
                        "matmul",
                        "linear",
                        "addmm",
                        "addbmm",
                        "baddbmm",
                        "addmv",
                        "addr",
                        "mv",
                        "dot",
                        "vdot",
                        "inner",
                        "outer",
                        "ger",
                        "einsum",
                        "tensordot",
                        "bilinear",
                        "chain_matmul",
                        "kron",
                        "linalg_matmul",
                        "linalg_multi_dot",
                        "linalg_vecdot",
                        "scaled_mm",
                        "int_mm",
                        "mkldnn_linear"};
const Names k_reduction = {"sum",
                           "mean",
                           "prod",
                           "amax",
                           "amin",
                           "max",
                           "min",
                           "argmax",
                           "argmin",
                           "std",
                           "var",
                           "std_mean",
                           "var_mean",
                           "logsumexp",
                           "norm",
                           "nansum",
                           "nanmean",
                           "median",
                           "nanmedian",
                           "mode",
                           "all",
                           "any",
                           "count_nonzero",
                           "aminmax",
                           "linalg_vector_norm",
                           "linalg_matrix_norm",
                           "linalg_norm",
                           "frobenius_norm",
                           "nuclear_norm",
                           "dist",
                           "trace"};
const Names k_activation = {"relu",
                            "relu6",
                            "gelu",
                            "silu",
                            "mish",
                            "elu",
                            "selu",
                            "celu",
                            "leaky_relu",
                            "hardtanh",
                            "hardswish",
                            "hardsigmoid",
                            "sigmoid",
                            "tanh",
                            "softplus",
                            "softshrink",
                            "hardshrink",
                            "tanhshrink",
                            "prelu",
                            "rrelu",
                            "glu",
                            "log_sigmoid",
                            "log_sigmoid_forward",
                            "logsigmoid",
                            "threshold",
                            "rrelu_with_noise"};
const Names k_sorting = {"sort",    "argsort",      "topk",       "kthvalue",
                         "msort",   "unique",       "unique_dim", "unique_consecutive",
                         "unique2", "searchsorted", "bucketize"};
const Names k_factory = {"zeros",
                         "ones",
                         "empty",
                         "full",
                         "arange",
                         "range",
                         "linspace",
                         "logspace",
                         "eye",
                         "scalar_tensor",
                         "tensor",
                         "from_file",
                         "tril_indices",
                         "triu_indices",
                         "empty_strided",
                         "new_zeros",
                         "new_ones",
                         "new_empty",
                         "new_full",
                         "new_empty_strided",
                         "zeros_like",
                         "ones_like",
                         "empty_like",
                         "full_like",
                         "empty_permuted",
                         "hann_window",
                         "hamming_window",
                         "blackman_window",
                         "bartlett_window",
                         "kaiser_window"};
const Names k_shape = {"view",
                       "reshape",
                       "permute",
                       "transpose",
                       "t",
                       "swapaxes",
                       "swapdims",
                       "squeeze",
                       "unsqueeze",
                       "expand",
                       "expand_as",
                       "flatten",
                       "unflatten",
                       "cat",
                       "concat",
                       "concatenate",
                       "stack",
                       "hstack",
                       "vstack",
                       "dstack",
                       "column_stack",
                       "split",
                       "split_with_sizes",
                       "chunk",
                       "tensor_split",
                       "unbind",
                       "narrow",
                       "slice",
                       "select",
                       "flip",
                       "fliplr",
                       "flipud",
                       "roll",
                       "rot90",
                       "repeat",
                       "repeat_interleave",
                       "tile",
                       "movedim",
                       "moveaxis",
                       "contiguous",
                       "clone",
                       "as_strided",
                       "pad",
                       "constant_pad_nd",
                       "pixel_shuffle",
                       "pixel_unshuffle",
                       "unfold",
                       "diagonal",
                       "diag",
                       "diag_embed",
                       "diagflat",
                       "tril",
                       "triu",
                       "numpy_T",
                       "mT",
                       "mH",
                       "adjoint",
                       "alias",
                       "detach",
                       "lift",
                       "lift_fresh",
                       "lift_fresh_copy",
                       "channel_shuffle",
                       "im2col",
                       "col2im",
                       "view_as",
                       "reshape_as",
                       "broadcast_to",
                       "broadcast_tensors",
                       "atleast_1d",
                       "atleast_2d",
                       "atleast_3d",
                       "ravel",
                       "to",
                       "type_as",
                       "view_as_real",
                       "view_as_complex",
                       "squeeze_copy",
                       "unsqueeze_copy",
                       "view_copy",
                       "permute_copy",
                       "transpose_copy",
                       "expand_copy",
                       "t_copy",
                       "alias_copy",
                       "detach_copy",
                       "slice_copy",
                       "select_copy",
                       "split_copy",
                       "unbind_copy",
                       "diagonal_copy",
                       "as_strided_copy"};

// Attention ops are tagged seeded for their dropout, which defaults to 0:
// called with the defaults, as tasks call them, they are deterministic.
bool random_only_through_dropout(const c10::FunctionSchema& schema) {
  for (const auto& argument : schema.arguments()) {
    if (argument.name() == "dropout_p" && argument.default_value() && argument.default_value()->isDouble() &&
        argument.default_value()->toDouble() == 0.0) {
      return true;
    }
  }
  return false;
}

// What an operator computes, from its name (docs/OPS.md lists the rules).
// The name after "::" without its leading underscores and one trailing underscore ("aten::_relu_" -> "relu").
std::string_view base_name(std::string_view name) {
  std::string_view base = name.substr(name.find("::") == std::string_view::npos ? 0 : name.find("::") + 2);
  while (base.starts_with("_")) base.remove_prefix(1);
  if (base.ends_with("_") && base.size() > 1) base.remove_suffix(1);
  return base;
}

bool seeded_random(const c10::OperatorHandle& op) {
  return op.hasTag(at::Tag::nondeterministic_seeded) && !random_only_through_dropout(op.schema());
}

std::string categorize(std::string_view base, const c10::OperatorHandle& op) {
  if (seeded_random(op) || contains(base, "dropout") || contains(base, "rand") ||
      any_of(base, {"bernoulli", "normal", "multinomial", "poisson", "uniform", "exponential", "geometric", "cauchy",
                    "log_normal"})) {
    return "random";
  }
  if (contains(base, "quantize") || starts(base, "q_") || starts(base, "fake_quant") || starts(base, "quantized"))
    return "quantized";
  if (contains(base, "loss") ||
      any_of(base, {"cross_entropy", "nll", "kl_div", "binary_cross_entropy", "binary_cross_entropy_with_logits"})) {
    return "loss";
  }
  if (contains(base, "attention")) return "attention";
  if (contains(base, "conv") && !contains(base, "convert")) return "convolution";
  if (contains(base, "pool")) return "pooling";
  for (std::string_view norm : {"batch_norm", "layer_norm", "group_norm", "instance_norm", "rms_norm",
                                "local_response_norm", "renorm", "weight_norm"}) {
    if (contains(base, norm)) return "normalization";
  }
  if (contains(base, "softmax") || contains(base, "softmin")) return "softmax";
  if (any_of(base, k_matmul) || starts(base, "addmm") || starts(base, "scaled_mm")) return "matmul";
  if (starts(base, "fft_") || starts(base, "fft")) return "fft";
  if (starts(base, "cum") || starts(base, "logcumsumexp")) return "scan";
  if (op.hasTag(at::Tag::reduction) || any_of(base, k_reduction)) return "reduction";
  if (starts(base, "linalg_") ||
      any_of(base, {"cholesky", "qr", "svd", "det", "logdet", "slogdet", "inverse", "pinverse", "lu",
                    "triangular_solve", "geqrf", "ormqr", "orgqr", "lstsq", "matrix_exp", "matrix_power"})) {
    return "linalg";
  }
  if (any_of(base, k_activation)) return "activation";
  if (any_of(base, k_sorting)) return "sorting";
  if (starts(base, "upsample") || starts(base, "grid_sampler") || starts(base, "affine_grid") ||
      contains(base, "interpolate")) {
    return "resampling";
  }
  if (starts(base, "index") || starts(base, "scatter") || starts(base, "gather") || starts(base, "masked_") ||
      starts(base, "take") || starts(base, "embedding") || starts(base, "nonzero") || contains(base, "_scatter") ||
      any_of(base, {"put", "argwhere", "index_put_impl"})) {
    return "indexing";
  }
  if (any_of(base, k_factory)) return "factory";
  if (any_of(base, k_shape) || starts(base, "reflection_pad") || starts(base, "replication_pad") ||
      starts(base, "unsafe_") || starts(base, "reshape_alias")) {
    return "shape";
  }
  if (op.hasTag(at::Tag::pointwise)) return "elementwise";
  return "other";
}

bool returns_alias(const c10::FunctionSchema& schema) {
  return std::any_of(schema.returns().begin(), schema.returns().end(),
                     [](const c10::Argument& r) { return r.alias_info() != nullptr && !r.alias_info()->isWrite(); });
}

bool is_out_variant(const c10::FunctionSchema& schema, const c10::OperatorHandle& op) {
  return op.hasTag(at::Tag::out_variant) || contains(schema.overload_name(), "out") ||
         std::any_of(schema.arguments().begin(), schema.arguments().end(),
                     [](const c10::Argument& a) { return a.is_out(); });
}

std::vector<std::string> tags_of(std::string_view name, std::string_view base, const c10::FunctionSchema& schema,
                                 const c10::OperatorHandle& op, const std::string& category) {
  std::vector<std::string> tags;
  bool out = is_out_variant(schema, op);
  if (schema.is_mutable() && !out) tags.push_back("inplace");
  if (out) tags.push_back("out-variant");
  if (contains(base, "backward")) tags.push_back("backward");
  if (category == "random") tags.push_back("random");
  if (op.hasTag(at::Tag::nondeterministic_bitwise)) tags.push_back("nondeterministic");
  if (category == "quantized" || contains(schema.arguments().empty() ? "" : c10::toString(schema), "QScheme"))
    tags.push_back("quantized");
  if (contains(base, "sparse") || contains(base, "_coo") || contains(base, "_csr") || contains(base, "_csc") ||
      contains(base, "_bsr") || contains(base, "_bsc")) {
    tags.push_back("sparse");
  }
  for (std::string_view backend :
       {"cudnn", "miopen", "mkldnn", "mps", "vulkan", "xnnpack", "fbgemm", "nnpack", "mkl", "cufft", "nested"}) {
    if (contains(name, backend)) {
      tags.push_back("backend-specific");
      break;
    }
  }
  if (op.hasTag(at::Tag::dynamic_output_shape) || op.hasTag(at::Tag::data_dependent_output))
    tags.push_back("data-dependent-shape");
  if (returns_alias(schema)) tags.push_back("view");
  if (base.starts_with("_") || name.substr(name.find("::") + 2).starts_with("_")) tags.push_back("private");
  if (op.hasTag(at::Tag::pointwise)) tags.push_back("pointwise");
  if (op.hasTag(at::Tag::reduction)) tags.push_back("reduction");
  if (op.hasTag(at::Tag::core)) tags.push_back("core");
  return tags;
}

bool has_cpu_kernel(const c10::OperatorHandle& op) {
  for (auto key :
       {c10::DispatchKey::CPU, c10::DispatchKey::CompositeImplicitAutograd, c10::DispatchKey::CompositeExplicitAutograd,
        c10::DispatchKey::CompositeExplicitAutogradNonFunctional}) {
    if (op.hasKernelForDispatchKey(key)) return true;
  }
  return false;
}

bool base_name_is_stft(std::string_view name) {
  return name == "aten::stft" || name == "aten::istft";
}

// Why an op cannot appear in a task, or "" when it can.
std::string why_unusable(std::string_view name, const c10::FunctionSchema& schema, const c10::OperatorHandle& op,
                         const std::vector<std::string>& tags, const std::string& category) {
  if (!name.starts_with("aten::")) return "not an aten operator";
  auto has = [&](std::string_view tag) { return std::find(tags.begin(), tags.end(), tag) != tags.end(); };
  for (std::string_view tag : {"inplace", "out-variant", "backward", "random", "nondeterministic", "quantized",
                               "sparse", "backend-specific", "data-dependent-shape", "private"}) {
    if (has(tag)) return "tagged " + std::string(tag);
  }
  if (category == "factory") return "creates tensors from nothing";
  // LibTorch's CPU FFTs go through MKL's DFT, which writes past its buffers for some shapes (valgrind: an invalid
  // write in mkl_dft_avx2_gather_c_c under aten::fft_ihfftn) and so corrupts the heap of the tool that runs the
  // reference. Every tool runs references in-process, so the whole family stays out, stft and istft with it.
  if (category == "fft" || base_name_is_stft(name))
    return "computed by MKL's DFT on the CPU, which can corrupt the heap";
  bool tensor_input = false;
  for (const auto& argument : schema.arguments()) {
    if (!is_supported_argument_type(argument.real_type())) {
      return "argument '" + argument.name() + "' has unsupported type " + argument.real_type()->str();
    }
    auto kind = argument.type()->kind();
    tensor_input =
        tensor_input || kind == c10::TypeKind::TensorType ||
        (kind == c10::TypeKind::ListType && argument.type()->containedType(0)->kind() == c10::TypeKind::TensorType);
  }
  if (!tensor_input) return "takes no tensor";
  if (schema.returns().empty()) return "returns nothing";
  for (const auto& r : schema.returns()) {
    if (r.type()->kind() != c10::TypeKind::TensorType) return "returns a " + r.type()->str();
  }
  if (!has_cpu_kernel(op)) return "no CPU kernel";
  return "";
}

}  // namespace

std::vector<Json> crawl_ops() {
  auto names = c10::Dispatcher::singleton().getAllOpNames();
  std::sort(names.begin(), names.end(), [](const c10::OperatorName& a, const c10::OperatorName& b) {
    return std::tie(a.name, a.overload_name) < std::tie(b.name, b.overload_name);
  });
  std::vector<Json> records;
  for (const auto& op_name : names) {
    auto op = c10::Dispatcher::singleton().findOp(op_name);
    if (!op || !op->hasSchema()) continue;
    const auto& schema = op->schema();
    std::string_view name = op_name.name;
    std::string_view base = base_name(name);
    std::string category = categorize(base, *op);
    auto tags = tags_of(name, base, schema, *op, category);
    std::string why = why_unusable(name, schema, *op, tags, category);
    bool deterministic = std::find(tags.begin(), tags.end(), "random") == tags.end() &&
                         std::find(tags.begin(), tags.end(), "nondeterministic") == tags.end();
    Json record = {{"kind", "op"},
                   {"name", op_name.name},
                   {"overload", op_name.overload_name},
                   {"schema", c10::toString(schema)},
                   {"category", category},
                   {"tags", tags},
                   {"deterministic", deterministic},
                   {"usable", why.empty()}};
    if (!why.empty()) record["why_unusable"] = why;
    records.push_back(std::move(record));
  }
  return records;
}

std::optional<std::string> op_category(std::string_view qualified) {
  size_t scope = qualified.find("::");
  size_t dot = qualified.find('.', scope == std::string_view::npos ? 0 : scope + 2);
  std::string name(qualified.substr(0, dot));
  std::string overload(dot == std::string_view::npos ? std::string_view() : qualified.substr(dot + 1));
  auto op = c10::Dispatcher::singleton().findSchema({name, overload});
  if (!op) return std::nullopt;
  return categorize(base_name(name), *op);
}

std::string summarize_ops(const std::vector<Json>& ops) {
  std::map<std::string, std::pair<int, int>> counts;  // category -> (all, usable)
  for (const auto& op : ops) {
    auto& [all, usable] = counts[op.value("category", "")];
    ++all;
    usable += op.value("usable", false) ? 1 : 0;
  }
  auto row = [](const std::string& label, int all, int usable) {
    char line[64];
    std::snprintf(line, sizeof line, "%-15s %6d %6d\n", label.c_str(), all, usable);
    return std::string(line);
  };
  std::string table = "category           ops usable\n";
  int total = 0, total_usable = 0;
  for (const auto& [category, count] : counts) {
    table += row(category, count.first, count.second);
    total += count.first;
    total_usable += count.second;
  }
  return table + row("total", total, total_usable);
}

bool seeded_random(std::string_view qualified) {
  auto [name, overload] = split_op_name(qualified);
  auto op = c10::Dispatcher::singleton().findSchema({name, overload});
  return op && seeded_random(*op);
}

}  // namespace ca
