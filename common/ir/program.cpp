#include "ir/program.h"

#include <array>
#include <limits>
#include <set>

#include "util/json_field.h"
#include "util/spell.h"

namespace ca {
namespace {

using Error = std::unexpected<std::string>;

struct DistInfo {
  Dist dist;
  std::string_view name;
  int params;  // how many numbers follow the name in {"uniform": [lo, hi]}; file takes {"path", "key"} instead
};

constexpr std::array<DistInfo, 10> k_dists = {{
    {Dist::rand, "rand", 0},
    {Dist::randn, "randn", 0},
    {Dist::uniform, "uniform", 2},
    {Dist::normal, "normal", 2},
    {Dist::kaiming_uniform, "kaiming_uniform", 0},
    {Dist::ones, "ones", 0},
    {Dist::zeros, "zeros", 0},
    {Dist::randint, "randint", 2},
    {Dist::constant, "constant", 1},
    {Dist::file, "file", 0},
}};

std::vector<std::string> dist_names() {
  std::vector<std::string> names;
  for (const auto& d : k_dists) names.emplace_back(d.name);
  return names;
}

bool is_identifier(const std::string& name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

// {"file": {"path": "weights.safetensors", "key": "conv.weight"}}; the file is
// read when the tensor is made, not here, so parsing needs no file system.
std::expected<Init, std::string> parse_file_init(const Json& json, std::string_view path) {
  if (!json.is_object()) return Error(std::string(path) + ": 'file' needs {\"path\": ..., \"key\": ...}");
  if (auto ok = check_known_fields(json, {"path", "key"}, path); !ok) return Error(ok.error());
  auto file = string_field(json, "path", path);
  if (!file) return Error(file.error());
  auto key = string_field(json, "key", path);
  if (!key) return Error(key.error());
  if (file->empty() || key->empty()) return Error(std::string(path) + ": path and key must not be empty");
  return Init{Dist::file, 0, 1, *file, *key};
}

std::expected<Init, std::string> parse_init(const Json& json, std::string_view path) {
  std::string name;
  const Json* numbers = nullptr;
  if (json.is_string()) {
    name = json.get<std::string>();
  } else if (json.is_object() && json.size() == 1) {
    name = json.begin().key();
    numbers = &json.begin().value();
  } else {
    return Error(std::string(path) + ": expected a distribution name or {\"name\": [numbers]}, got " + json_type(json));
  }
  if (name == "file" && numbers != nullptr) return parse_file_init(*numbers, field_path(path, "file"));
  for (const auto& d : k_dists) {
    if (d.name != name) continue;
    if (d.dist == Dist::file) return Error(std::string(path) + ": 'file' needs {\"path\": ..., \"key\": ...}");
    Init init{d.dist, 0, 1};
    if (d.params == 0) {
      if (numbers != nullptr) return Error(std::string(path) + ": '" + name + "' takes no numbers");
      return init;
    }
    Json list = numbers == nullptr ? Json() : (numbers->is_array() ? *numbers : Json::array({*numbers}));
    if (!list.is_array() || list.size() != size_t(d.params) ||
        !std::all_of(list.begin(), list.end(), [](const Json& v) { return v.is_number(); })) {
      return Error(std::string(path) + ": '" + name + "' needs " + std::to_string(d.params) + " number(s), as {\"" +
                   name + "\": [...]}");
    }
    init.a = list[0].get<double>();
    if (d.params == 2) init.b = list[1].get<double>();
    if ((d.dist == Dist::uniform || d.dist == Dist::randint) && !(init.a < init.b)) {
      return Error(std::string(path) + ": '" + name + "' needs low < high");
    }
    if (d.dist == Dist::normal && !(init.b > 0)) return Error(std::string(path) + ": 'normal' needs std > 0");
    return init;
  }
  return Error(std::string(path) + ": unknown distribution '" + name + "'" + did_you_mean(name, dist_names()) +
               " (one of " + quoted_list(dist_names()) + ")");
}

std::expected<TensorSpec, std::string> parse_tensor(const Json& json, std::string_view path, bool is_param) {
  if (auto ok = check_known_fields(json, {"name", "dtype", "shape", "init"}, path); !ok) return Error(ok.error());
  TensorSpec spec;
  auto name = string_field(json, "name", path);
  if (!name) return Error(name.error());
  if (!is_identifier(*name)) return Error(field_path(path, "name") + ": '" + *name + "' is not an identifier");
  spec.name = *name;

  auto dtype_name_str = string_field(json, "dtype", path);
  if (!dtype_name_str) return Error(dtype_name_str.error());
  auto dtype = parse_dtype(*dtype_name_str);
  if (!dtype) {
    return Error(field_path(path, "dtype") + ": unknown dtype '" + *dtype_name_str + "'" +
                 did_you_mean(*dtype_name_str, dtype_names()) + " (one of " + quoted_list(dtype_names()) + ")");
  }
  spec.dtype = *dtype;

  auto shape = int_list_field(json, "shape", path);
  if (!shape) return Error(shape.error());
  for (size_t i = 0; i < shape->size(); ++i) {
    if ((*shape)[i] < 0)
      return Error(index_path(field_path(path, "shape"), i) + ": negative size " + std::to_string((*shape)[i]));
  }
  spec.shape = *shape;

  if (is_floating(spec.dtype)) {
    spec.init.dist = is_param ? Dist::kaiming_uniform : Dist::randn;
  } else {
    spec.init = {Dist::randint, 0, spec.dtype == DType::boolean ? 2.0 : 10.0};
  }
  if (auto it = json.find("init"); it != json.end()) {
    auto init = parse_init(*it, field_path(path, "init"));
    if (!init) return Error(init.error());
    spec.init = *init;
  }
  bool draws_floats = spec.init.dist == Dist::rand || spec.init.dist == Dist::randn ||
                      spec.init.dist == Dist::uniform || spec.init.dist == Dist::normal ||
                      spec.init.dist == Dist::kaiming_uniform;
  if (draws_floats && !is_floating(spec.dtype)) {
    return Error(field_path(path, "init") + ": a " + std::string(dtype_name(spec.dtype)) +
                 " tensor takes 'randint', 'ones', 'zeros' or 'constant'");
  }
  if (spec.init.dist == Dist::kaiming_uniform && spec.shape.empty()) {
    return Error(field_path(path, "init") + ": 'kaiming_uniform' needs at least one dimension (it uses the fan-in)");
  }
  return spec;
}

// Checks that every reference in `arg` (lists included) is defined.
std::expected<void, std::string> check_refs(const Json& arg, std::string_view path,
                                            const std::set<std::string>& defined) {
  if (arg.is_array()) {
    for (size_t i = 0; i < arg.size(); ++i) {
      auto ok = check_refs(arg[i], index_path(path, i), defined);
      if (!ok) return ok;
    }
    return {};
  }
  auto ref = parse_ref(arg);
  if (!ref) return {};
  if (!defined.contains(ref->name)) {
    std::vector<std::string> names(defined.begin(), defined.end());
    return Error(std::string(path) + ": dangling reference '%" + ref->name +
                 "': no input, param or earlier output has that name" + did_you_mean(ref->name, names));
  }
  return {};
}

std::expected<Node, std::string> parse_node(const Json& json, std::string_view path, std::set<std::string>& defined) {
  if (auto ok = check_known_fields(json, {"op", "args", "kwargs", "out"}, path); !ok) return Error(ok.error());
  Node node;
  auto op = string_field(json, "op", path);
  if (!op) return Error(op.error());
  if (op->find("::") == std::string::npos)
    return Error(field_path(path, "op") + ": '" + *op + "' needs a namespace, as in 'aten::" + *op + "'");
  std::tie(node.op, node.overload) = split_op_name(*op);

  if (auto it = json.find("args"); it != json.end()) {
    if (!it->is_array()) return Error(field_path(path, "args") + ": expected an array, got " + json_type(*it));
    node.args = *it;
  }
  if (auto it = json.find("kwargs"); it != json.end()) {
    if (!it->is_object()) return Error(field_path(path, "kwargs") + ": expected an object, got " + json_type(*it));
    node.kwargs = *it;
  }
  auto ok = check_refs(node.args, field_path(path, "args"), defined);
  for (auto it = node.kwargs.begin(); ok && it != node.kwargs.end(); ++it) {
    ok = check_refs(it.value(), field_path(field_path(path, "kwargs"), it.key()), defined);
  }
  if (!ok) return Error(ok.error());

  auto out_path = field_path(path, "out");
  auto out = require_field(json, "out", path);
  if (!out) return Error(out.error());
  // Empty for an op that returns nothing (aten::_assert_tensor_metadata, which torch.export records for `.to`);
  // binding checks the count against the schema.
  if (!(*out)->is_array()) return Error(out_path + ": expected a list of names");
  for (size_t i = 0; i < (*out)->size(); ++i) {
    auto name = as_string((**out)[i], index_path(out_path, i));
    if (!name) return Error(name.error());
    if (!is_identifier(*name)) return Error(index_path(out_path, i) + ": '" + *name + "' is not an identifier");
    if (!defined.insert(*name).second) return Error(index_path(out_path, i) + ": '" + *name + "' is already defined");
    node.outputs.push_back(*name);
  }
  return node;
}

std::expected<std::vector<TensorSpec>, std::string> parse_tensors(const Json& json, std::string_view key,
                                                                  std::string_view path,
                                                                  std::set<std::string>& defined) {
  std::vector<TensorSpec> specs;
  auto it = json.find(std::string(key));
  if (it == json.end()) return specs;
  auto list_path = field_path(path, key);
  if (!it->is_array()) return Error(list_path + ": expected an array, got " + json_type(*it));
  for (size_t i = 0; i < it->size(); ++i) {
    auto spec = parse_tensor((*it)[i], index_path(list_path, i), key == "params");
    if (!spec) return Error(spec.error());
    if (!defined.insert(spec->name).second)
      return Error(index_path(list_path, i) + ".name: '" + spec->name + "' is already defined");
    specs.push_back(std::move(*spec));
  }
  return specs;
}

}  // namespace

int64_t TensorSpec::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string Node::qualified_name() const {
  return overload.empty() ? op : op + "." + overload;
}

std::pair<std::string, std::string> split_op_name(std::string_view qualified) {
  auto dot = qualified.find('.', qualified.find("::") == std::string_view::npos ? 0 : qualified.find("::") + 2);
  if (dot == std::string_view::npos) return {std::string(qualified), ""};
  std::string overload(qualified.substr(dot + 1));
  if (overload == "default") overload.clear();
  return {std::string(qualified.substr(0, dot)), overload};
}

std::optional<double> parse_special_float(const Json& arg) {
  if (!arg.is_object() || arg.size() != 1) return std::nullopt;
  auto it = arg.find("float");
  if (it == arg.end() || !it->is_string()) return std::nullopt;
  const auto& text = it->get_ref<const std::string&>();
  if (text == "inf") return std::numeric_limits<double>::infinity();
  if (text == "-inf") return -std::numeric_limits<double>::infinity();
  if (text == "nan") return std::numeric_limits<double>::quiet_NaN();
  return std::nullopt;
}

std::optional<Ref> parse_ref(const Json& arg) {
  if (!arg.is_string()) return std::nullopt;
  const auto& text = arg.get_ref<const std::string&>();
  if (text.size() < 2 || text[0] != '%' || text[1] == '%') return std::nullopt;
  Ref ref{text.substr(1), std::nullopt};
  auto bracket = ref.name.find('[');
  if (bracket != std::string::npos && ref.name.back() == ']') {
    std::string digits = ref.name.substr(bracket + 1, ref.name.size() - bracket - 2);
    if (!digits.empty() && std::all_of(digits.begin(), digits.end(), ::isdigit)) {
      ref.index = std::stoll(digits);
      ref.name.resize(bracket);
    }
  }
  return ref;
}

std::expected<Program, std::string> parse_program(const Json& json, std::string_view path) {
  if (auto ok = check_known_fields(json, {"inputs", "params", "nodes", "outputs"}, path); !ok) return Error(ok.error());
  Program program;
  std::set<std::string> defined;
  auto inputs = parse_tensors(json, "inputs", path, defined);
  if (!inputs) return Error(inputs.error());
  program.inputs = std::move(*inputs);
  auto params = parse_tensors(json, "params", path, defined);
  if (!params) return Error(params.error());
  program.params = std::move(*params);

  auto nodes = require_field(json, "nodes", path);
  if (!nodes) return Error(nodes.error());
  auto nodes_path = field_path(path, "nodes");
  if (!(*nodes)->is_array()) return Error(nodes_path + ": expected an array, got " + json_type(**nodes));
  for (size_t i = 0; i < (*nodes)->size(); ++i) {
    auto node = parse_node((**nodes)[i], index_path(nodes_path, i), defined);
    if (!node) return Error(node.error());
    program.nodes.push_back(std::move(*node));
  }

  auto outputs = require_field(json, "outputs", path);
  if (!outputs) return Error(outputs.error());
  auto outputs_path = field_path(path, "outputs");
  if (!(*outputs)->is_array() || (*outputs)->empty())
    return Error(outputs_path + ": expected a non-empty list of names");
  for (size_t i = 0; i < (*outputs)->size(); ++i) {
    auto name = as_string((**outputs)[i], index_path(outputs_path, i));
    if (!name) return Error(name.error());
    auto bare = name->starts_with("%") ? name->substr(1) : *name;
    auto ok = check_refs(Json("%" + bare), index_path(outputs_path, i), defined);
    if (!ok) return Error(ok.error());

    program.outputs.push_back(bare);
  }
  return program;
}

Json to_json(const Init& init) {
  if (init.dist == Dist::file) return Json::object({{"file", Json::object({{"path", init.path}, {"key", init.key}})}});
  for (const auto& d : k_dists) {
    if (d.dist != init.dist) continue;
    if (d.params == 0) return std::string(d.name);
    Json numbers = d.params == 1 ? Json(init.a) : Json::array({init.a, init.b});
    return Json::object({{std::string(d.name), numbers}});
  }
  return nullptr;
}

namespace {

Json tensors_to_json(const std::vector<TensorSpec>& specs) {
  Json list = Json::array();
  for (const auto& spec : specs) {
    list.push_back(
        {{"name", spec.name}, {"dtype", dtype_name(spec.dtype)}, {"shape", spec.shape}, {"init", to_json(spec.init)}});
  }
  return list;
}

}  // namespace

Json to_json(const Program& program) {
  Json nodes = Json::array();
  for (const auto& node : program.nodes) {
    Json j = {{"op", node.qualified_name()}, {"args", node.args}};
    if (!node.kwargs.empty()) j["kwargs"] = node.kwargs;
    j["out"] = node.outputs;
    nodes.push_back(std::move(j));
  }
  return {{"inputs", tensors_to_json(program.inputs)},
          {"params", tensors_to_json(program.params)},
          {"nodes", std::move(nodes)},
          {"outputs", program.outputs}};
}

}  // namespace ca
