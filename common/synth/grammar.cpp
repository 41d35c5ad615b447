#include "synth/grammar.h"

#include <algorithm>
#include <numeric>

namespace ca {

std::vector<OpTemplate> op_templates(const std::vector<Json>& records, size_t& skipped) {
  std::vector<OpTemplate> templates;
  skipped = 0;
  for (const auto& record : records) {
    if (!record.value("usable", false)) continue;
    std::string name = record.value("name", "");
    std::string overload = record.value("overload", "");
    auto schema = find_op_schema(name, overload);
    if (!schema) {
      ++skipped;
      continue;
    }
    templates.push_back({name, overload, record.value("category", "other"), std::move(*schema)});
  }
  return templates;
}

namespace {

bool has(std::string_view name, std::string_view part) {
  return name.find(part) != std::string_view::npos;
}

// Per-node state while its arguments are filled.
struct NodeFill {
  const OpTemplate& op;
  FillContext& context;
  std::vector<int64_t> shape;  // the primary's
  int rank = 0;
  int dim = -1;                 // the last dim chosen, for "length" and friends
  std::vector<int64_t> weight;  // the last weight made, for its bias
  bool primary_used = false;

  int64_t rank_or_one() const { return std::max(rank, 1); }
  // A dim of the primary, mostly past the batch dim.
  int64_t pick_dim() {
    if (rank <= 1) return dim = 0;
    dim = context.rng.chance(0.85) ? int(1 + context.rng.below(uint64_t(rank - 1))) : 0;
    return dim;
  }
  int64_t size_at(int d) const { return rank == 0 ? 1 : shape[size_t(d)]; }

  std::string add_tensor(std::vector<int64_t> dims, bool param, DType dtype, Init init) {
    Program& program = context.program;
    auto& list = param ? program.params : program.inputs;
    std::string name = (param ? "w" : "x") + std::to_string(list.size());
    list.push_back({name, dtype, std::move(dims), init});
    return "%" + name;
  }

  std::vector<int64_t> weight_shape() {
    Rng& rng = context.rng;
    int64_t last = size_at(rank - 1);
    std::vector<std::vector<int64_t>> options;
    if (op.category == "convolution" && rank >= 3) {
      std::vector<int64_t> w = {rng.pick(std::vector<int64_t>{8, 16, 32, 64}), shape[1]};
      int64_t k = rng.pick(std::vector<int64_t>{1, 3, 3});
      for (int i = 2; i < rank; ++i) w.push_back(k);
      options.push_back(w);
    } else if (op.category == "normalization" && rank >= 2) {
      options = {{shape[1]}, {last}};
    } else {
      options = {{rng.pick(std::vector<int64_t>{64, 128, 256}), last}, {last}};
      if (rank >= 2) options.push_back({shape[1]});
    }
    return rng.pick(options);
  }

  std::vector<int64_t> partner_shape() {
    Rng& rng = context.rng;
    int64_t k = rng.pick(std::vector<int64_t>{32, 64, 128, 256});
    std::vector<int64_t> matmul_right = shape;
    if (rank >= 2) {
      matmul_right[size_t(rank - 2)] = shape[size_t(rank - 1)];
      matmul_right[size_t(rank - 1)] = k;
    }
    if (op.category == "matmul" && rank >= 2 && rng.chance(0.7)) return matmul_right;
    std::vector<std::vector<int64_t>> options = {shape, shape, {size_at(rank - 1)}};
    if (rank >= 2) options.push_back(matmul_right);
    if (rank >= 3) {
      std::vector<int64_t> channel(size_t(rank - 1), 1);
      channel[0] = shape[1];
      options.push_back(channel);
    }
    return rng.pick(options);
  }

  // A second tensor argument: an earlier value of the wanted shape (so tasks
  // become DAGs), or a new input or param.
  Json other_tensor(const std::string& name) {
    Rng& rng = context.rng;
    int64_t smallest = rank == 0 ? 1 : *std::min_element(shape.begin(), shape.end());
    if (name == "index" || name == "indices") {
      return add_tensor(shape, false, DType::int64, {Dist::randint, 0, double(std::max<int64_t>(1, smallest))});
    }
    if (name == "mask" || name == "condition") return add_tensor(shape, false, DType::boolean, {Dist::randint, 0, 2});
    if (has(name, "bias"))
      return add_tensor(
          weight.empty() ? std::vector<int64_t>{size_at(std::min(1, rank - 1))} : std::vector<int64_t>{weight[0]}, true,
          DType::float32, {Dist::uniform, -0.1, 0.1});
    if (has(name, "weight")) {
      weight = weight_shape();
      return add_tensor(weight, true, DType::float32, {Dist::kaiming_uniform, 0, 1});
    }
    std::vector<int64_t> dims = partner_shape();
    std::vector<const SynthValue*> same;
    for (const auto& value : context.values) {
      if (value.floating && value.shape == dims) same.push_back(&value);
    }
    if (!same.empty() && rng.chance(0.3)) return "%" + rng.pick(same)->name;
    return add_tensor(dims, false, DType::float32, {Dist::randn, 0, 1});
  }

  std::optional<Json> int_rule(const std::string& name) {
    Rng& rng = context.rng;
    if (name == "dim" || name == "dim0" || name == "dim1" || name == "source" || name == "destination")
      return pick_dim();
    if (name == "start_dim") return rank > 1 ? 1 : 0;
    if (name == "end_dim") return -1;
    if (name == "groups") return 1;
    if (name == "diagonal" || name == "offset") return int64_t(rng.below(2));
    if (name == "index" || name == "start") return 0;
    if (name == "length" || name == "end") return std::max<int64_t>(1, size_at(dim < 0 ? int(pick_dim()) : dim) / 2);
    if (name == "upscale_factor" || name == "downscale_factor" || name == "repeats") return 2;
    if (name == "k") return 1;
    if (name == "num_groups") {
      int64_t c = rank >= 2 ? shape[1] : 1;
      for (int64_t g : {8, 4, 2}) {
        if (c % g == 0) return g;
      }
      return 1;
    }
    if (name == "kernel_size") return rng.pick(std::vector<int64_t>{2, 3});
    if (name == "stride") return rng.pick(std::vector<int64_t>{1, 2});
    if (name == "padding") return int64_t(rng.below(2));
    if (name == "dilation") return 1;
    if (name == "output_padding") return 0;
    return std::nullopt;
  }

  std::optional<Json> int_list_rule(const std::string& name, std::optional<int32_t> fixed) {
    Rng& rng = context.rng;
    const std::string base = op.name.substr(op.name.find("::") + 2);
    // Kernels that take both trust kernel_size to match the weight (a
    // mismatch corrupts the heap in slow_conv_transpose3d's CPU kernel).
    if (name == "kernel_size" && weight.size() > 2) return std::vector<int64_t>(weight.begin() + 2, weight.end());
    if (fixed) {  // int[2] stride, kernel_size...: one value stands for all
      if (auto value = int_rule(name)) return value;
      if (name == "output_size") return std::max<int64_t>(1, size_at(rank - 1) / 2);
      return std::nullopt;
    }
    if (name == "dims" && base == "permute") {
      std::vector<int64_t> order(static_cast<size_t>(rank_or_one()));
      std::iota(order.begin(), order.end(), 0);
      for (size_t i = order.size() - 1; i > 1; --i)
        std::swap(order[i], order[1 + rng.below(i)]);  // keep the batch dim first
      return order;
    }
    if (name == "dim" || name == "dims" || name == "shifts")
      return std::vector<int64_t>{name == "shifts" ? 1 : pick_dim()};
    if (name == "size" || name == "shape") {
      int64_t rest = 1;
      for (int i = 1; i < rank; ++i) rest *= shape[size_t(i)];
      if (base == "expand" || base == "broadcast_to") {
        std::vector<int64_t> sizes(size_t(rank), -1);
        return sizes;
      }
      if (rank >= 3 && rng.chance(0.5)) {
        std::vector<int64_t> merged = {-1};
        for (int i = 1; i < rank - 2; ++i) merged.push_back(shape[size_t(i)]);
        merged.push_back(shape[size_t(rank - 2)] * shape[size_t(rank - 1)]);
        return merged;
      }
      return std::vector<int64_t>{-1, rest};
    }
    if (name == "normalized_shape") return std::vector<int64_t>{size_at(rank - 1)};
    if (name == "pad") return std::vector<int64_t>(rank >= 4 ? 4 : 2, 1);
    if (name == "repeats" || name == "sizes") {
      std::vector<int64_t> times(size_t(rank_or_one()), 1);
      times.back() = 2;
      return times;
    }
    return std::nullopt;
  }

  std::optional<Json> real_rule(const std::string& name) {
    Rng& rng = context.rng;
    if (name == "eps") return 1e-5;
    if (name == "negative_slope") return rng.pick(std::vector<double>{0.01, 0.1, 0.2});
    if (name == "alpha" || name == "beta" || name == "scale") return 1.0;
    if (name == "lambd" || name == "threshold") return 0.5;
    if (name == "min" || name == "min_val") return -1.0;
    if (name == "max" || name == "max_val") return 1.0;
    if (name == "momentum") return 0.1;
    if (name == "p" || name == "exponent") return 2.0;
    if (name == "value") return 0.0;
    return rng.pick(std::vector<double>{0.5, 2.0});
  }

  std::optional<Json> literal(const OpArgument& argument) {
    const std::string& name = argument.name;
    switch (argument.kind) {
      case ArgKind::integer:
        return int_rule(name);
      case ArgKind::int_list:
        return int_list_rule(name, argument.fixed_size);
      case ArgKind::real:
        return real_rule(name);
      case ArgKind::scalar: {
        if (name == "other") return context.rng.pick(std::vector<Json>{0.5, 2.0, 1});
        return real_rule(name);
      }
      case ArgKind::real_list:
        if (name == "scale_factors") return std::vector<double>(size_t(std::max(1, rank - 2)), 2.0);
        return std::nullopt;
      case ArgKind::boolean:
        if (name == "training" || name == "train" || name == "cudnn_enabled") return true;
        if (name == "keepdim") return context.rng.chance(0.5);
        return false;
      case ArgKind::string:
        if (name == "approximate") return "tanh";
        if (name == "reduce" || name == "reduction") return "sum";
        return std::nullopt;
      case ArgKind::scalar_type:
        return "float32";
      default:
        return std::nullopt;
    }
  }

  // The argument's JSON value; nullptr-valued optional means "leave it out".
  std::optional<std::optional<Json>> fill(const OpArgument& argument) {
    Rng& rng = context.rng;
    const bool has_default = argument.has_default;
    switch (argument.kind) {
      case ArgKind::tensor:
        if (!primary_used) {
          primary_used = true;
          return std::optional<Json>("%" + context.primary.name);
        }
        return std::optional<Json>(other_tensor(argument.name));
      case ArgKind::tensor_list: {  // cat, stack: the primary and one more of its shape
        Json first = primary_used ? other_tensor("other") : Json("%" + context.primary.name);
        primary_used = true;
        auto partner = std::find_if(context.values.rbegin(), context.values.rend(), [&](const SynthValue& v) {
          return v.floating && v.shape == shape && v.name != context.primary.name;
        });
        Json second = partner != context.values.rend() && rng.chance(0.5)
                          ? Json("%" + partner->name)
                          : Json(add_tensor(shape, false, DType::float32, {}));
        return std::optional<Json>(Json::array({first, second}));
      }
      case ArgKind::optional_tensor:
        if ((has(argument.name, "weight") || has(argument.name, "bias")) && rng.chance(0.5)) {
          return std::optional<Json>(other_tensor(argument.name));
        }
        return has_default ? std::optional<Json>() : std::optional<Json>(nullptr);
      case ArgKind::other_tensor_list:
      case ArgKind::implicit:
        if (has_default || argument.optional) return std::optional<Json>();
        return std::nullopt;
      default:
        break;
    }
    if (has_default && rng.chance(0.8)) return std::optional<Json>();
    auto value = literal(argument);
    if (value) return std::optional<Json>(*value);
    if (has_default) return std::optional<Json>();
    if (argument.optional) return std::optional<Json>(nullptr);
    return std::nullopt;
  }
};

}  // namespace

std::optional<Node> fill_node(const OpTemplate& op, FillContext& context, const std::string& out_name,
                              std::string& why) {
  NodeFill state{op, context, context.primary.shape, int(context.primary.shape.size()), -1, {}, false};
  Node node;
  node.op = op.name;
  node.overload = op.overload;
  node.outputs = {out_name};
  bool positional = true;  // arguments go by position until the first one left out
  for (const auto& argument : op.schema.arguments) {
    auto value = state.fill(argument);
    if (!value) {
      why = "no rule for argument '" + argument.name + "' (" + argument.type + ")";
      return std::nullopt;
    }
    if (!*value) {
      positional = false;
      continue;
    }
    if (positional && !argument.kwarg_only) {
      node.args.push_back(**value);
    } else {
      positional = false;
      node.kwargs[argument.name] = **value;
    }
  }
  return node;
}

std::vector<int64_t> first_input_shape(Rng& rng, int64_t batch) {
  switch (rng.pick(std::vector<int>{2, 2, 3, 3, 4, 4, 5})) {
    case 2:
      return {batch, rng.pick(std::vector<int64_t>{256, 512, 1024, 2048, 4096})};
    case 3:
      return {batch, rng.pick(std::vector<int64_t>{32, 64, 128, 256}),
              rng.pick(std::vector<int64_t>{64, 128, 256, 512})};
    case 4: {
      int64_t side = rng.pick(std::vector<int64_t>{16, 32, 64});
      return {batch, rng.pick(std::vector<int64_t>{3, 8, 16, 32, 64}), side, side};
    }
    default: {
      int64_t side = rng.pick(std::vector<int64_t>{8, 16});
      return {batch, rng.pick(std::vector<int64_t>{4, 8}), side, side, side};
    }
  }
}

}  // namespace ca
