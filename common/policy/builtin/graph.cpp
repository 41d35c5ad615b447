// lower_program: the ops through the op table, then which values need memory, the order of the steps, and which
// pointwise results a step computes in its own epilogue.
#include "policy/builtin/graph.h"

#include <algorithm>
#include <set>

#include "policy/builtin/ops.h"
#include "policy/builtin/schema.h"

namespace ca::builtin {
namespace {

int resolve_alias(const Plan& plan, int v) {
  while (plan.vals[v].kind == ValKind::alias) v = plan.vals[v].args[0];
  return v;
}

bool is_stored(const Val& val) {
  return val.kind == ValKind::buffer || val.needs_buffer;
}

// The names a node's args and kwargs reference.
std::vector<std::string> referenced_names(const Node& node) {
  std::vector<std::string> names;
  auto visit = [&](const Json& value, auto&& self) -> void {
    if (value.is_array()) {
      for (const Json& item : value) self(item, self);
      return;
    }
    if (auto ref = parse_ref(value))
      names.push_back(ref->index ? ref->name + "[" + std::to_string(*ref->index) + "]" : ref->name);
  };
  visit(node.args, visit);
  for (const auto& [key, value] : node.kwargs.items()) visit(value, visit);
  return names;
}

// Makes value `id` an output: in place when it is a step's or a fused chain's result, else through a copy.
void place_output(Plan& plan, int id, int position, int end_node) {
  Val& val = plan.vals[id];
  bool in_place = val.output < 0 && val.input < 0 && val.kind != ValKind::alias;
  if (in_place) {
    val.output = position;
    val.needs_buffer = true;
    plan.outputs.push_back(id);
    return;
  }
  Val copy;
  copy.kind = ValKind::pointwise;
  copy.shape = val.shape;
  copy.expr = "$0";
  copy.args = {id};
  copy.align = {-1};
  copy.node = end_node;
  copy.dtype = val.dtype;
  copy.output = position;
  copy.needs_buffer = true;
  plan.vals.push_back(std::move(copy));
  plan.outputs.push_back(static_cast<int>(plan.vals.size()) - 1);
}

// The stored values `root` reads through its fused chain; a leaf's flag is set when the path to it goes through a
// permute, a concat or an indexed view (it is read at other indices than root's).
void chain_leaves(const Plan& plan, int v, bool through_permute, std::map<int, bool>& leaves, bool root) {
  const Val& val = plan.vals[v];
  if (!root && is_stored(val)) {
    leaves[v] = leaves[v] || through_permute;
    return;
  }
  bool permute =
      through_permute || val.kind == ValKind::permute || val.kind == ValKind::concat || val.kind == ValKind::indexed;
  for (int arg : val.args) chain_leaves(plan, arg, permute, leaves, false);
}

// Moves pointwise roots into the epilogue of the last step they read, when they read its output at the index it
// writes (same element count, no permute on the way) and everything else they read is ready before it.
void fuse_epilogues(Plan& plan, std::vector<int>& pointwise_roots) {
  std::map<int, size_t> step_of_out;
  for (size_t s = 0; s < plan.steps.size(); ++s) step_of_out[plan.steps[s].out] = s;
  std::vector<int> kept;
  for (int root : pointwise_roots) {
    std::map<int, bool> leaves;
    chain_leaves(plan, root, false, leaves, true);
    int last = -1;
    for (const auto& [leaf, reordered] : leaves) {
      if (step_of_out.contains(leaf) && (last < 0 || plan.vals[leaf].node > plan.vals[last].node)) last = leaf;
    }
    bool fusable = last >= 0 && !leaves[last] && plan.vals[last].numel() == plan.vals[root].numel();
    for (const auto& [leaf, reordered] : leaves) {
      if (leaf != last && last >= 0 && plan.vals[leaf].node >= plan.vals[last].node) fusable = false;
    }
    if (!fusable) {
      kept.push_back(root);
      continue;
    }
    plan.steps[step_of_out[last]].epilogue.push_back(root);
  }
  pointwise_roots = std::move(kept);
}

}  // namespace

std::expected<Plan, std::vector<Uncovered>> lower_program(const Program& program) {
  Plan plan;
  Lowering lowering(plan);
  std::vector<Uncovered> uncovered;
  int input = 0;
  for (const auto* list : {&program.inputs, &program.params}) {
    for (const TensorSpec& spec : *list) {
      Val val;
      val.shape = spec.shape;
      val.input = input++;
      val.dtype = static_cast<int>(spec.dtype);
      int id = lowering.add(std::move(val));
      lowering.bind(spec.name, id);
      const std::string reason = "reads " + std::string(dtype_name(spec.dtype)) + " tensor '" + spec.name +
                                 "': the writer covers float32 only";
      if (spec.dtype == DType::float32) continue;
      // Integers and bools are exact in float32 only up to 2^24, but type promotion with a float32 operand rounds
      // them to float32 as the kernel does, so an arithmetic operand may read them.
      if (is_floating(spec.dtype)) {
        lowering.forbid(spec.name, reason);
      } else {
        lowering.operand_only(spec.name, reason + " (or as an arithmetic operand beside a float32 one)");
      }
    }
  }
  plan.n_inputs = input;
  std::set<std::string> missing;  // outputs of uncovered nodes
  for (size_t i = 0; i < program.nodes.size(); ++i) {
    const Node& node = program.nodes[i];
    lowering.node = static_cast<int>(i);
    auto refs = referenced_names(node);
    bool after_uncovered = std::ranges::any_of(refs, [&](const std::string& name) { return missing.contains(name); });
    auto fail = [&](std::string reason) {
      for (const std::string& out : node.outputs) missing.insert(out);
      if (!after_uncovered) uncovered.push_back({static_cast<int>(i), node.qualified_name(), std::move(reason)});
    };
    if (after_uncovered) {
      fail("");
      continue;
    }
    auto entry = op_table().find(node.qualified_name());
    if (entry == op_table().end()) {
      fail("no pattern of the writer covers this op");
      continue;
    }
    auto args = bind_schema(entry->second.schema, node);
    if (!args) {
      fail(args.error());
      continue;
    }
    if (auto done = entry->second.handler(lowering, *args, node); !done) fail(done.error());
  }
  int end_node = static_cast<int>(program.nodes.size());
  for (size_t k = 0; k < program.outputs.size() && uncovered.empty(); ++k) {
    std::string name = program.outputs[k].starts_with('%') ? program.outputs[k].substr(1) : program.outputs[k];
    auto id = lowering.output(Json("%" + name));
    if (!id) {
      uncovered.push_back({-1, "output " + name, id.error()});
      continue;
    }
    place_output(plan, *id, static_cast<int>(k), end_node);
  }
  if (!uncovered.empty()) return std::unexpected(uncovered);

  // What the steps read is stored. A chain that its own node's step reads (einsum's permuted operands) is stored
  // before that step; any other, after its node's steps, which it may read (renorm's scale, then a convolution).
  std::set<int> own_operands;
  for (const Step& step : plan.steps) {
    for (int operand : {step.a, step.b}) {
      if (operand < 0) continue;
      const int stored = resolve_alias(plan, operand);
      if (plan.vals[stored].node == step.node) own_operands.insert(stored);
      plan.vals[stored].needs_buffer = true;
    }
  }
  std::vector<int> pointwise_roots;
  for (size_t v = 0; v < plan.vals.size(); ++v) {
    const Val& val = plan.vals[v];
    if (val.needs_buffer && val.kind != ValKind::buffer && val.kind != ValKind::alias) {
      pointwise_roots.push_back(static_cast<int>(v));
    }
  }
  fuse_epilogues(plan, pointwise_roots);
  // Steps in node order: the stored chains of a node that its own step reads (einsum's permuted operands), the step,
  // then the node's other stored chains.
  std::vector<Step> ordered;
  auto store_roots = [&](int node, bool read_by_own_step) {
    for (int root : pointwise_roots) {
      if (plan.vals[root].node != node || own_operands.contains(root) != read_by_own_step) continue;
      Step step;
      step.kind = StepKind::pointwise;
      step.node = node;
      step.out = root;
      ordered.push_back(std::move(step));
    }
  };
  for (int node = -1; node <= end_node; ++node) {
    store_roots(node, true);
    for (const Step& step : plan.steps) {
      if (step.node == node) ordered.push_back(step);
    }
    store_roots(node, false);
  }
  plan.steps = std::move(ordered);
  return plan;
}

Variant variant_of(Backend backend, int index) {
  int i = ((index % variant_count(backend)) + variant_count(backend)) % variant_count(backend);
  Variant variant;
  // First the safest accumulation; later variants trade it for speed or change the blocking.
  const int64_t tiles[4][3] = {{64, 64, 256}, {32, 128, 128}, {128, 64, 256}, {64, 128, 512}};
  const int blocks[4] = {256, 128, 512, 64};
  variant.tile_m = tiles[i][0];
  variant.tile_n = tiles[i][1];
  variant.tile_k = tiles[i][2];
  variant.block = blocks[i];
  variant.double_accumulators = i % 2 == 0;
  variant.own_gemm = i % 2 == 1;
  variant.gemm_tile = i == 1 ? 64 : 128;
  std::string accumulate = variant.double_accumulators ? "double accumulators" : "float accumulators";
  if (backend == Backend::cpu) {
    variant.describe = "gemm tile " + std::to_string(variant.tile_m) + "x" + std::to_string(variant.tile_n) + "x" +
                       std::to_string(variant.tile_k) + ", " + accumulate;
  } else {
    variant.describe = std::to_string(variant.block) + " threads a block, " + accumulate + ", products " +
                       (variant.own_gemm ? "in own " + std::to_string(variant.gemm_tile) + "-tiles, epilogue fused"
                                         : "through cuBLAS where an own kernel does other work");
  }
  return variant;
}

int variant_count(Backend) {
  return 4;
}

}  // namespace ca::builtin
