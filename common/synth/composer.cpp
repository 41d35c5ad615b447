#include "synth/composer.h"

#include <cmath>
#include <cstdio>

#include "torch/interpreter.h"
#include "torch/task_check.h"
#include "torch/tensors.h"

namespace ca {
namespace {

// Tasks are composed with batch dim 5 and probed again with 7: the runtime
// estimate is affine in the batch, so two points fix it. Neither value occurs
// among the grammar's other dims, so a dim equal to 5 is a batch dim.
constexpr int64_t k_batch_probe[2] = {5, 7};
constexpr int k_node_tries = 24;     // ops tried for one position of a task
constexpr int k_task_attempts = 50;  // fresh starts for one task

// Relative weight of each op category when a node's op is drawn (then
// within the category, see pick_op); categories not listed weigh 0.5.
const std::vector<std::pair<std::string, double>> k_category_weights = {
    {"activation", 3},   {"elementwise", 3}, {"matmul", 2},  {"convolution", 1.5}, {"normalization", 1.5},
    {"reduction", 1.5},  {"pooling", 1},     {"softmax", 1}, {"shape", 1},         {"scan", 0.5},
    {"resampling", 0.5}, {"other", 0.5},     {"loss", 0.3},  {"indexing", 0.3},    {"sorting", 0.3},
    {"attention", 0.3},  {"linalg", 0.2},    {"fft", 0.2}};

// Shapes of every value of a program (inputs, params, node outputs) from
// shape inference: the error of create() or infer_shapes() otherwise.
std::expected<std::map<std::string, ValueInfo>, std::pair<std::string, std::string>> probe(
    const Program& program, std::vector<at::ScalarType>* dtypes) {
  Program all = program;
  all.outputs.clear();
  for (const auto& node : program.nodes) all.outputs.push_back(node.outputs[0]);
  auto interpreter = Interpreter::create(all);
  if (!interpreter) return std::unexpected(std::pair{std::string("binding"), interpreter.error()});
  auto shapes = interpreter->infer_shapes();
  if (!shapes) return std::unexpected(std::pair{std::string("shape check"), shapes.error()});
  std::map<std::string, ValueInfo> values;
  for (const auto* list : {&program.inputs, &program.params}) {
    for (const auto& spec : *list)
      values[spec.name] = {spec.shape, int64_t(at::elementSize(to_scalar_type(spec.dtype)))};
  }
  for (size_t i = 0; i < shapes->size(); ++i) {
    const auto& shape = (*shapes)[i];
    values[all.outputs[i]] = {shape.sizes, int64_t(at::elementSize(shape.dtype))};
    if (dtypes) dtypes->push_back(shape.dtype);
  }
  return values;
}

// The program with every input and param dim equal to `from` set to `to`.
Program with_batch(Program program, int64_t from, int64_t to) {
  for (auto* list : {&program.inputs, &program.params}) {
    for (auto& spec : *list) std::replace(spec.shape.begin(), spec.shape.end(), from, to);
  }
  return program;
}

std::string near_key(const Program& program) {
  std::string key;
  for (const auto& node : program.nodes) key += node.qualified_name() + ";";
  for (const auto* list : {&program.inputs, &program.params}) {
    for (const auto& spec : *list) key += Json(spec.shape).dump() + ";";
  }
  return key;
}

// An index drawn with probability proportional to its weight.
size_t pick_weighted(Rng& rng, const std::vector<double>& weights) {
  double total = 0;
  for (double w : weights) total += w;
  double x = rng.unit() * total;
  for (size_t i = 0; i < weights.size(); ++i) {
    x -= weights[i];
    if (x < 0) return i;
  }
  return weights.size() - 1;
}

// Drops LibTorch's warnings (deprecations of ops the grammar happens to draw):
// they would flood stderr and say nothing about the tasks.
class QuietWarnings : public c10::WarningHandler {
 public:
  void process(const c10::Warning&) override {}
};

}  // namespace

struct Composer::Draft {
  Program program;
  std::vector<SynthValue> values;  // the last one is the latest result
  std::vector<std::string> categories;
};

Composer::Composer(std::vector<OpTemplate> ops, SynthOptions options)
    : m_ops(std::move(ops)), m_options(std::move(options)), m_schedule(m_options.mix), m_rng(m_options.seed) {
  for (size_t i = 0; i < m_ops.size(); ++i) m_by_category[m_ops[i].category].push_back(i);
  for (const auto& [category, _] : m_by_category) {
    double weight = 0.5;
    for (const auto& [name, w] : k_category_weights) {
      if (name == category) weight = w;
    }
    m_category_weights.push_back({category, weight});
  }
}

const OpTemplate& Composer::pick_op() {
  std::vector<double> weights;
  for (const auto& [_, w] : m_category_weights) weights.push_back(w);
  const auto& members = m_by_category[m_category_weights[pick_weighted(m_rng, weights)].first];
  weights.clear();
  // torch.special's functions (zeta, Chebyshev polynomials...) are rare in models.
  for (size_t i : members) weights.push_back(m_ops[i].name.starts_with("aten::special_") ? 0.1 : 1.0);
  return m_ops[members[pick_weighted(m_rng, weights)]];
}

// Tries ops for one position until the interpreter accepts one.
bool Composer::place_node(Draft& draft, int position) {
  for (int attempt = 0; attempt < k_node_tries; ++attempt) {
    const OpTemplate& op = pick_op();
    Program trial = draft.program;
    FillContext context{trial, draft.values, draft.values.back(), m_rng};
    std::string why;
    std::string out = "t" + std::to_string(position);
    auto node = fill_node(op, context, out, why);
    if (!node) {
      reject("no rule for an argument");
      continue;
    }
    ++m_stats.candidates;
    trial.nodes.push_back(std::move(*node));
    trial.outputs = {out};
    std::vector<at::ScalarType> dtypes;
    auto values = probe(trial, &dtypes);
    if (!values) {
      reject(values.error().first);
      continue;
    }
    at::ScalarType dtype = dtypes.back();
    if (at::isComplexType(dtype) || !from_scalar_type(dtype)) {
      reject("unsupported dtype");
      continue;
    }
    const ValueInfo& result = values->at(out);
    if (result.numel() == 0) {
      reject("empty result");
      continue;
    }
    if (result.numel() > values->at(draft.values.front().name).numel() * 64) {
      reject("result over 64x the first input");
      continue;
    }
    ++m_stats.accepted;
    size_t old_inputs = draft.program.inputs.size(), old_params = draft.program.params.size();
    draft.program = std::move(trial);
    for (size_t i = old_inputs; i < draft.program.inputs.size(); ++i) {
      const auto& spec = draft.program.inputs[i];
      draft.values.push_back({spec.name, spec.shape, is_floating(spec.dtype)});
    }
    for (size_t i = old_params; i < draft.program.params.size(); ++i) {
      const auto& spec = draft.program.params[i];
      draft.values.push_back({spec.name, spec.shape, is_floating(spec.dtype)});
    }
    draft.values.push_back({out, result.shape, at::isFloatingType(dtype)});
    draft.categories.push_back(op.category);
    return true;
  }
  return false;
}

std::expected<Composer::Draft, std::string> Composer::compose(int op_count) {
  Draft draft;
  std::vector<int64_t> shape = first_input_shape(m_rng, k_batch_probe[0]);
  draft.program.inputs.push_back({"x0", DType::float32, shape, {Dist::randn, 0, 1}});
  draft.values.push_back({"x0", shape, true});
  for (int position = 0; position < op_count; ++position) {
    if (!place_node(draft, position)) return std::unexpected("no op fits position " + std::to_string(position));
  }
  if (!draft.values.back().floating) return std::unexpected("result not floating");
  bool computes =
      std::any_of(draft.categories.begin(), draft.categories.end(), [](const auto& c) { return c != "shape"; });
  if (!computes) return std::unexpected("only shape ops");
  return draft;
}

std::expected<Json, std::string> Composer::finish(const Draft& draft, int op_count) {
  // Cost at the two probe batches; the task's batch is where the line meets the target.
  Cost cost[2];
  int64_t widest = 0;
  for (int i = 0; i < 2; ++i) {
    auto values = probe(with_batch(draft.program, k_batch_probe[0], k_batch_probe[i]), nullptr);
    if (!values) return std::unexpected("not batch-scalable");
    cost[i] = estimate_cost(draft.program, *values, draft.categories, m_options.device);
    for (const auto& [_, value] : *values) widest = std::max(widest, value.numel());
  }
  double per_batch = (cost[1].ms - cost[0].ms) / double(k_batch_probe[1] - k_batch_probe[0]);
  if (per_batch <= 0) return std::unexpected("not batch-scalable");
  double fixed = cost[0].ms - per_batch * double(k_batch_probe[0]);
  int64_t max_batch = std::max<int64_t>(1, m_options.max_elements * k_batch_probe[1] / std::max<int64_t>(1, widest));
  int64_t batch = std::clamp<int64_t>(std::llround((m_options.target_ms - fixed) / per_batch), 1, max_batch);
  auto at_batch = [&](double a, double b) {
    return a + (b - a) * double(batch - k_batch_probe[0]) / double(k_batch_probe[1] - k_batch_probe[0]);
  };

  Program program = with_batch(draft.program, k_batch_probe[0], batch);
  if (m_near.contains(near_key(program))) return std::unexpected("near-duplicate");
  char id[64];
  std::snprintf(id, sizeof id, "synth-%llu-%06zu", static_cast<unsigned long long>(m_options.seed), m_stats.tasks);
  Json estimate = {{"device", m_options.device.name},
                   {"target_ms", m_options.target_ms},
                   {"ms", at_batch(cost[0].ms, cost[1].ms)},
                   {"flops", at_batch(cost[0].flops, cost[1].flops)},
                   {"bytes", at_batch(cost[0].bytes, cost[1].bytes)},
                   {"batch", batch}};
  Json record = {{"kind", "task"},
                 {"id", id},
                 {"source", "synth"},
                 {"program", to_json(program)},
                 {"seed", m_rng.next() & 0x7fffffff},
                 {"meta", {{"op_count", op_count}, {"estimate", estimate}}}};
  auto checked = check_task(record);
  if (!checked) return std::unexpected("full-size check");
  std::string fingerprint = (*checked)["meta"]["fingerprint"];
  if (!m_fingerprints.insert(fingerprint).second) return std::unexpected("duplicate fingerprint");
  m_near.insert(near_key(program));
  return checked;
}

std::expected<Json, std::string> Composer::next() {
  static QuietWarnings quiet;
  c10::WarningUtils::WarningHandlerGuard guard(&quiet);
  int op_count = m_schedule.next();
  m_rng = Rng::for_item(m_options.seed, m_stats.tasks);
  for (int attempt = 0; attempt < k_task_attempts; ++attempt) {
    auto draft = compose(op_count);
    if (!draft) {
      reject(draft.error());
      continue;
    }
    auto task = finish(*draft, op_count);
    if (!task) {
      reject(task.error());
      continue;
    }
    m_schedule.made(op_count);
    ++m_stats.tasks;
    ++m_stats.op_counts[size_t(op_count - 1)];
    return task;
  }
  return std::unexpected("no task of " + std::to_string(op_count) + " op(s) in " + std::to_string(k_task_attempts) +
                         " attempts (see the rejections below)");
}

std::expected<void, std::string> Composer::replay(const Json& task) {
  const Json& meta = task.value("meta", Json::object());
  const Json& op_count = meta.value("op_count", Json());
  if (!op_count.is_number_integer() || op_count.get<int>() < 1 || op_count.get<int>() > 5)
    return std::unexpected("meta.op_count: not 1..5");
  if (!meta.value("fingerprint", Json()).is_string()) return std::unexpected("meta.fingerprint: missing");
  auto program = parse_program(task.value("program", Json()));
  if (!program) return std::unexpected(program.error());
  m_schedule.made(op_count.get<int>());
  ++m_stats.tasks;
  ++m_stats.replayed;
  ++m_stats.op_counts[size_t(op_count.get<int>() - 1)];
  m_fingerprints.insert(meta["fingerprint"].get<std::string>());
  m_near.insert(near_key(*program));
  return {};
}

std::string Composer::summary(double seconds) const {
  char line[256];
  std::string text;
  // The rate is of the tasks composed here: a resume's replayed ones took no time.
  const size_t composed = m_stats.tasks - m_stats.replayed;
  std::snprintf(line, sizeof line, "%zu tasks in %.1f s (%.1f tasks/s); %zu of %zu candidate nodes accepted (%.1f%%)",
                m_stats.tasks, seconds, seconds > 0 ? double(composed) / seconds : 0.0, m_stats.accepted,
                m_stats.candidates,
                m_stats.candidates ? 100.0 * double(m_stats.accepted) / double(m_stats.candidates) : 0.0);
  text += line;
  if (m_stats.replayed > 0) text += "; " + std::to_string(m_stats.replayed) + " of the tasks from the journal";
  text += "; op counts";
  for (size_t i = 0; i < m_stats.op_counts.size(); ++i)
    text += " " + std::to_string(i + 1) + ":" + std::to_string(m_stats.op_counts[i]);
  text += "; rejected:";
  for (const auto& [reason, count] : m_stats.rejections) text += " " + reason + " " + std::to_string(count) + ",";
  if (text.back() == ',') text.pop_back();
  return text;
}

}  // namespace ca
