#include "torch/interpreter.h"

#include <functional>
#include <map>
#include <set>

#include "torch/convert.h"
#include "torch/tensors.h"
#include "util/json_field.h"
#include "util/spell.h"

namespace ca {
namespace {

using Error = std::unexpected<std::string>;

// Every registered operator, name -> overloads; built once on first use.
const std::map<std::string, std::vector<std::string>>& operator_overloads() {
  static const auto table = [] {
    std::map<std::string, std::vector<std::string>> overloads;
    for (const auto& name : c10::Dispatcher::singleton().getAllOpNames()) {
      overloads[name.name].push_back(name.overload_name);
    }
    return overloads;
  }();
  return table;
}

std::expected<c10::OperatorHandle, std::string> find_operator(const Node& node, const std::string& path) {
  auto handle = c10::Dispatcher::singleton().findSchema({node.op, node.overload});
  if (handle) return *handle;
  const auto& table = operator_overloads();
  auto it = table.find(node.op);
  if (it == table.end()) {
    std::vector<std::string> names;
    for (const auto& [name, _] : table) names.push_back(name);
    return Error(path + ": unknown operator '" + node.op + "'" + did_you_mean(node.op, names));
  }
  std::vector<std::string> overloads;
  for (const auto& overload : it->second) overloads.push_back(overload.empty() ? "default" : overload);
  return Error(path + ": " + node.op + " has no overload '" + node.overload + "'" +
               did_you_mean(node.overload, overloads) + " (overloads: " + quoted_list(overloads) + ")");
}

// Names of the arguments that the schema lets the op write to.
std::string written_arguments(const c10::FunctionSchema& schema) {
  std::string names;
  for (const auto& argument : schema.arguments()) {
    if (argument.alias_info() != nullptr && argument.alias_info()->isWrite())
      names += (names.empty() ? "'" : ", '") + argument.name() + "'";
  }
  return names;
}

std::expected<BoundNode, std::string> bind_node(const Node& node, const std::string& path, ValueScope& scope) {
  auto handle = find_operator(node, field_path(path, "op"));
  if (!handle) return Error(handle.error());
  const c10::FunctionSchema& schema = handle->schema();
  if (schema.is_mutable()) {
    return Error(field_path(path, "op") + ": " + node.qualified_name() + " writes to " + written_arguments(schema) +
                 "; task programs use functional operators only");
  }

  const auto& arguments = schema.arguments();
  size_t positional = 0;
  while (positional < arguments.size() && !arguments[positional].kwarg_only()) ++positional;
  if (node.args.size() > positional) {
    return Error(field_path(path, "args") + ": " + node.qualified_name() + " takes " + std::to_string(positional) +
                 " positional argument(s), got " + std::to_string(node.args.size()) +
                 " (schema: " + c10::toString(schema) + ")");
  }
  std::vector<std::string> argument_names;
  for (const auto& argument : arguments) argument_names.push_back(argument.name());
  for (auto it = node.kwargs.begin(); it != node.kwargs.end(); ++it) {
    auto at = std::find(argument_names.begin(), argument_names.end(), it.key());
    std::string kw_path = field_path(field_path(path, "kwargs"), it.key());
    if (at == argument_names.end()) {
      return Error(kw_path + ": " + node.qualified_name() + " has no argument '" + it.key() + "'" +
                   did_you_mean(it.key(), argument_names));
    }
    if (size_t(at - argument_names.begin()) < node.args.size())
      return Error(kw_path + ": argument given both by position and by name");
  }

  BoundNode bound{*handle, {}, {}};
  for (size_t i = 0; i < arguments.size(); ++i) {
    const Json* given = nullptr;
    std::string arg_path = index_path(field_path(path, "args"), i);
    if (i < node.args.size()) {
      given = &node.args[i];
    } else if (auto it = node.kwargs.find(arguments[i].name()); it != node.kwargs.end()) {
      given = &*it;
      arg_path = field_path(field_path(path, "kwargs"), arguments[i].name());
    }
    auto recipe = bind_argument(arguments[i], given, given ? arg_path : path, scope);
    if (!recipe) return Error(recipe.error());
    bound.args.push_back(std::move(*recipe));
  }

  const auto& returns = schema.returns();
  if (node.outputs.size() != returns.size()) {
    return Error(field_path(path, "out") + ": " + node.qualified_name() + " returns " + std::to_string(returns.size()) +
                 " value(s), 'out' names " + std::to_string(node.outputs.size()));
  }
  for (size_t k = 0; k < returns.size(); ++k) bound.outputs.push_back(scope.add(node.outputs[k], returns[k].type()));
  return bound;
}

std::string first_line(const char* text) {
  std::string line(text);
  auto newline = line.find('\n');
  if (newline != std::string::npos) line.resize(newline);
  return line;
}

}  // namespace

std::expected<Interpreter, std::string> Interpreter::create(const Program& program, std::string_view path) {
  Interpreter interpreter(program, std::string(path));
  ValueScope scope;
  for (const auto& spec : program.inputs) scope.add(spec.name, c10::TensorType::get());
  for (const auto& spec : program.params) scope.add(spec.name, c10::TensorType::get());
  std::string nodes_path = field_path(path, "nodes");
  for (size_t i = 0; i < program.nodes.size(); ++i) {
    auto bound = bind_node(program.nodes[i], index_path(nodes_path, i), scope);
    if (!bound) return Error(bound.error());
    interpreter.m_nodes.push_back(std::move(*bound));
  }
  for (size_t i = 0; i < program.outputs.size(); ++i) {
    // Outputs are "y" or "ys[1]"; parse_program checked that the name exists.
    Ref ref = *parse_ref(Json("%" + program.outputs[i]));
    int id = scope.index.at(ref.name);
    c10::TypePtr type = scope.types[size_t(id)];
    if (ref.index && type->kind() == c10::TypeKind::ListType) type = type->castRaw<c10::ListType>()->getElementType();
    if (type->kind() != c10::TypeKind::TensorType) {
      return Error(index_path(field_path(path, "outputs"), i) + ": '" + program.outputs[i] + "' is a " + type->str() +
                   "; program outputs must be tensors");
    }
    interpreter.m_outputs.push_back(ValueRef{id, ref.index ? int(*ref.index) : -1});
  }
  interpreter.m_value_types = std::move(scope.types);
  return interpreter;
}

namespace {

std::expected<c10::IValue, std::string> resolve(const ValueRef& ref, const std::vector<c10::IValue>& values) {
  const c10::IValue& value = values[size_t(ref.value)];
  if (ref.element < 0) return value;
  auto list = value.toList();
  if (size_t(ref.element) >= list.size()) {
    return Error("element " + std::to_string(ref.element) + " of a list of " + std::to_string(list.size()));
  }
  return list.get(size_t(ref.element));
}

template <typename Element>
std::expected<c10::IValue, std::string> build_list(const ArgRecipe& recipe, const std::vector<c10::IValue>& values) {
  c10::List<Element> list;
  for (const auto& item : recipe.list) {
    if (!item) {
      list.push_back(Element());
      continue;
    }
    auto value = resolve(*item, values);
    if (!value) return Error(value.error());
    list.push_back(value->toTensor());
  }
  return c10::IValue(std::move(list));
}

std::expected<c10::IValue, std::string> materialize(const ArgRecipe& recipe, const std::vector<c10::IValue>& values,
                                                    const at::Device& device) {
  switch (recipe.kind) {
    case ArgRecipe::Kind::constant:
      return recipe.constant;
    case ArgRecipe::Kind::ref:
      return resolve(recipe.ref, values);
    case ArgRecipe::Kind::tensor_list:
      return build_list<at::Tensor>(recipe, values);
    case ArgRecipe::Kind::optional_tensor_list:
      return build_list<std::optional<at::Tensor>>(recipe, values);
    case ArgRecipe::Kind::device:
      return c10::IValue(device);
  }
  return Error("unknown argument kind");
}

// Applies `f` to every tensor in a value, lists included.
c10::IValue map_tensors(const c10::IValue& value, const std::function<at::Tensor(const at::Tensor&)>& f) {
  if (value.isTensor()) return f(value.toTensor());
  if (!value.isList()) return value;
  auto list = value.toList();
  c10::impl::GenericList mapped(list.elementType());
  for (size_t i = 0; i < list.size(); ++i) mapped.push_back(map_tensors(list.get(i), f));
  return mapped;
}

// Calls the op; LibTorch reports errors by throwing c10::Error, and this is
// where they become values.
std::expected<void, std::string> call_op(const c10::OperatorHandle& op, torch::jit::Stack& stack) {
  try {
    op.callBoxed(stack);
  } catch (const c10::Error& e) {
    return Error(first_line(e.what_without_backtrace()));
  } catch (const std::exception& e) {
    return Error(first_line(e.what()));
  }
  return {};
}

// Runs a node whose op has no meta kernel on real zero-filled tensors.
std::expected<void, std::string> call_op_off_meta(const c10::OperatorHandle& op, torch::jit::Stack& stack,
                                                  const at::Device& device) {
  for (auto& value : stack) {
    value = map_tensors(value, [&](const at::Tensor& t) { return at::zeros(t.sizes(), t.options().device(device)); });
  }
  auto called = call_op(op, stack);
  if (!called) return called;
  for (auto& value : stack) {
    value = map_tensors(value, [](const at::Tensor& t) { return at::empty(t.sizes(), t.options().device(at::kMeta)); });
  }
  return {};
}

}  // namespace

std::expected<std::vector<at::Tensor>, std::string> Interpreter::run(const std::vector<at::Tensor>& tensors) const {
  return execute(tensors, nullptr);
}

std::expected<std::vector<at::Tensor>, std::string> Interpreter::execute(const std::vector<at::Tensor>& tensors,
                                                                         const at::Device* meta_fallback) const {
  size_t expected_count = m_program.inputs.size() + m_program.params.size();
  if (tensors.size() != expected_count) {
    return Error("expected " + std::to_string(expected_count) + " tensors (inputs then params), got " +
                 std::to_string(tensors.size()));
  }
  at::Device device = tensors.empty() ? at::Device(at::kCPU) : tensors[0].device();
  std::vector<c10::IValue> values(m_value_types.size());
  for (size_t i = 0; i < tensors.size(); ++i) values[i] = tensors[i];

  torch::jit::Stack stack;
  std::string nodes_path = field_path(m_path, "nodes");
  for (size_t n = 0; n < m_nodes.size(); ++n) {
    const BoundNode& node = m_nodes[n];
    std::string where = index_path(nodes_path, n) + " (" + m_program.nodes[n].qualified_name() + ")";
    stack.clear();
    for (const auto& recipe : node.args) {
      auto value = materialize(recipe, values, device);
      if (!value) return Error(where + ": " + value.error());
      stack.push_back(std::move(*value));
    }
    torch::jit::Stack arguments = meta_fallback ? stack : torch::jit::Stack();
    auto called = call_op(node.op, stack);
    if (!called && meta_fallback) {
      stack = std::move(arguments);
      called = call_op_off_meta(node.op, stack, *meta_fallback);
    }
    if (!called) return Error(where + ": " + called.error());
    for (size_t k = 0; k < node.outputs.size(); ++k) values[size_t(node.outputs[k])] = std::move(stack[k]);
  }

  std::vector<at::Tensor> outputs;
  for (size_t i = 0; i < m_outputs.size(); ++i) {
    auto value = resolve(m_outputs[i], values);
    if (!value) return Error(index_path(field_path(m_path, "outputs"), i) + ": " + value.error());
    outputs.push_back(value->toTensor());
  }
  return outputs;
}

std::expected<std::vector<TensorShape>, std::string> Interpreter::infer_shapes(const at::Device& fallback) const {
  auto outputs = execute(make_meta_tensors(m_program), &fallback);
  if (!outputs) return Error("shape check on the meta device failed: " + outputs.error());
  std::vector<TensorShape> shapes;
  for (const auto& tensor : *outputs) shapes.push_back({tensor.sizes().vec(), tensor.scalar_type()});
  return shapes;
}

std::expected<Interpreter, std::string> check_program(const Json& json, std::string_view path) {
  auto program = parse_program(json, path);
  if (!program) return Error(program.error());
  auto interpreter = Interpreter::create(*program, path);
  if (!interpreter) return interpreter;
  auto shapes = interpreter->infer_shapes();
  if (!shapes) return Error(shapes.error());
  return interpreter;
}

}  // namespace ca
