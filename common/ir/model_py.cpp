#include "ir/model_py.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <unordered_map>
#include <unordered_set>

#include "ir/tensor_init.h"

namespace ca {
namespace {

constexpr std::string_view k_python_keywords[] = {
    "False", "None",     "True",  "and",    "as",   "assert", "async",  "await",    "break",
    "class", "continue", "def",   "del",    "elif", "else",   "except", "finally",  "for",
    "from",  "global",   "if",    "import", "in",   "is",     "lambda", "nonlocal", "not",
    "or",    "pass",     "raise", "return", "try",  "while",  "with",   "yield"};

// Names the rendered file itself uses inside functions.
constexpr std::string_view k_file_names[] = {"torch", "safetensors", "self",       "Model",
                                             "super", "float",       "get_inputs", "get_init_inputs"};

// dir(torch.nn.Module()) without dunders (torch 2.x): a param with one of these
// names would replace a method or make register_parameter fail.
constexpr std::string_view k_module_attributes[] = {"T_destination",
                                                    "_apply",
                                                    "_backward_hooks",
                                                    "_backward_pre_hooks",
                                                    "_buffers",
                                                    "_call_impl",
                                                    "_compiled_call_impl",
                                                    "_forward_hooks",
                                                    "_forward_hooks_always_called",
                                                    "_forward_hooks_with_kwargs",
                                                    "_forward_pre_hooks",
                                                    "_forward_pre_hooks_with_kwargs",
                                                    "_get_backward_hooks",
                                                    "_get_backward_pre_hooks",
                                                    "_get_name",
                                                    "_is_full_backward_hook",
                                                    "_load_from_state_dict",
                                                    "_load_state_dict_post_hooks",
                                                    "_load_state_dict_pre_hooks",
                                                    "_maybe_warn_non_full_backward_hook",
                                                    "_modules",
                                                    "_named_members",
                                                    "_non_persistent_buffers_set",
                                                    "_parameters",
                                                    "_register_load_state_dict_pre_hook",
                                                    "_register_state_dict_hook",
                                                    "_replicate_for_data_parallel",
                                                    "_save_to_state_dict",
                                                    "_slow_forward",
                                                    "_state_dict_hooks",
                                                    "_state_dict_pre_hooks",
                                                    "_version",
                                                    "_wrapped_call_impl",
                                                    "add_module",
                                                    "apply",
                                                    "bfloat16",
                                                    "buffers",
                                                    "call_super_init",
                                                    "children",
                                                    "compile",
                                                    "cpu",
                                                    "cuda",
                                                    "double",
                                                    "dump_patches",
                                                    "eval",
                                                    "extra_repr",
                                                    "float",
                                                    "forward",
                                                    "get_buffer",
                                                    "get_extra_state",
                                                    "get_parameter",
                                                    "get_submodule",
                                                    "half",
                                                    "ipu",
                                                    "load_state_dict",
                                                    "modules",
                                                    "mtia",
                                                    "named_buffers",
                                                    "named_children",
                                                    "named_modules",
                                                    "named_parameters",
                                                    "parameters",
                                                    "register_backward_hook",
                                                    "register_buffer",
                                                    "register_forward_hook",
                                                    "register_forward_pre_hook",
                                                    "register_full_backward_hook",
                                                    "register_full_backward_pre_hook",
                                                    "register_load_state_dict_post_hook",
                                                    "register_load_state_dict_pre_hook",
                                                    "register_module",
                                                    "register_parameter",
                                                    "register_state_dict_post_hook",
                                                    "register_state_dict_pre_hook",
                                                    "requires_grad_",
                                                    "set_extra_state",
                                                    "set_submodule",
                                                    "share_memory",
                                                    "state_dict",
                                                    "to",
                                                    "to_empty",
                                                    "train",
                                                    "training",
                                                    "type",
                                                    "xpu",
                                                    "zero_grad"};

// torch attributes that the IR spells as strings (MemoryFormat and Layout).
constexpr std::string_view k_torch_constants[] = {"contiguous_format", "channels_last", "channels_last_3d",
                                                  "preserve_format", "strided"};

template <size_t N>
bool contains(const std::string_view (&list)[N], std::string_view name) {
  return std::find(std::begin(list), std::end(list), name) != std::end(list);
}

bool is_python_name(std::string_view name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  bool word_chars = std::all_of(name.begin(), name.end(),
                                [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
  return word_chars && !contains(k_python_keywords, name);
}

bool is_dunder(std::string_view name) {
  return name.size() > 4 && name.starts_with("__") && name.ends_with("__");
}

bool shadows_local(std::string_view name) {
  return contains(k_python_keywords, name) || contains(k_file_names, name);
}

bool shadows_attribute(std::string_view name) {
  return contains(k_python_keywords, name) || contains(k_module_attributes, name) || is_dunder(name);
}

// Python identifiers for every value of the program.
class PyNames {
 public:
  explicit PyNames(const Program& program) {
    for (const auto& spec : program.inputs) m_taken.insert(spec.name);
    for (const auto& spec : program.params) m_taken.insert(spec.name);
    for (const auto& node : program.nodes) m_taken.insert(node.outputs.begin(), node.outputs.end());
    for (const auto& spec : program.inputs) assign(spec.name, shadows_local(spec.name));
    for (const auto& spec : program.params) {
      assign(spec.name, shadows_attribute(spec.name));
      m_params.insert(spec.name);
    }
    for (const auto& node : program.nodes) {
      for (const auto& name : node.outputs) assign(name, shadows_local(name));
    }
  }

  /// The identifier (for a param, the attribute name without "self.").
  const std::string& id(const std::string& name) const {
    auto it = m_ids.find(name);
    return it == m_ids.end() ? name : it->second;
  }

  /// The expression that reads the value.
  std::string expr(const std::string& name) const { return m_params.contains(name) ? "self." + id(name) : id(name); }

 private:
  void assign(const std::string& name, bool rename) {
    std::string candidate = name;
    // The first candidate already ends in '_', so this stops for dunders too.
    while (rename && (candidate == name || shadows_local(candidate) || contains(k_module_attributes, candidate) ||
                      m_taken.contains(candidate))) {
      candidate += '_';
    }
    m_taken.insert(candidate);
    m_ids[name] = candidate;
  }

  std::unordered_map<std::string, std::string> m_ids;
  std::unordered_set<std::string> m_params;
  std::unordered_set<std::string> m_taken;
};

// A Python float literal that reads back as `value`: shortest round-trip by
// default, or `digits` significant digits; always with a '.' or exponent.
std::string py_float(double value, int digits = 0) {
  if (std::isnan(value)) return "float('nan')";
  if (std::isinf(value)) return value > 0 ? "float('inf')" : "float('-inf')";
  char buffer[64];
  auto result = digits > 0 ? std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::general, digits)
                           : std::to_chars(buffer, buffer + sizeof buffer, value);
  std::string text(buffer, result.ptr);
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

std::string py_string(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    auto byte = static_cast<unsigned char>(c);
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (byte < 0x20 || byte == 0x7f) {
          char hex[8];
          std::snprintf(hex, sizeof hex, "\\x%02x", byte);
          out += hex;
        } else {
          out += c;  // UTF-8 passes through: Python source is UTF-8
        }
    }
  }
  return out + "\"";
}

std::string py_string_arg(const std::string& text, const PyNames& names) {
  if (auto ref = parse_ref(Json(text))) {
    std::string expr = names.expr(ref->name);
    return ref->index ? expr + "[" + std::to_string(*ref->index) + "]" : expr;
  }
  if (text.starts_with("%%")) return py_string(std::string_view(text).substr(1));
  auto dtypes = dtype_names();
  if (std::find(dtypes.begin(), dtypes.end(), text) != dtypes.end() || contains(k_torch_constants, text)) {
    return "torch." + text;
  }
  return py_string(text);
}

std::string py_value(const Json& value, const PyNames& names) {
  switch (value.type()) {
    case Json::value_t::null:
      return "None";
    case Json::value_t::boolean:
      return value.get<bool>() ? "True" : "False";
    case Json::value_t::number_integer:
      return std::to_string(value.get<int64_t>());
    case Json::value_t::number_unsigned:
      return std::to_string(value.get<uint64_t>());
    case Json::value_t::number_float:
      return py_float(value.get<double>());
    case Json::value_t::string:
      return py_string_arg(value.get_ref<const std::string&>(), names);
    case Json::value_t::array: {
      std::string out = "[";
      for (size_t i = 0; i < value.size(); ++i) out += (i > 0 ? ", " : "") + py_value(value[i], names);
      return out + "]";
    }
    case Json::value_t::object: {
      if (auto special = parse_special_float(value)) return py_float(*special);
      std::string out = "{";
      for (auto it = value.begin(); it != value.end(); ++it) {
        out += (it == value.begin() ? "" : ", ") + py_string(it.key()) + ": " + py_value(it.value(), names);
      }
      return out + "}";
    }
    case Json::value_t::binary:
    case Json::value_t::discarded:
      return "None";
  }
  return "None";
}

std::string py_shape(const std::vector<int64_t>& shape) {
  std::string out = "(";
  for (size_t i = 0; i < shape.size(); ++i) out += (i > 0 ? ", " : "") + std::to_string(shape[i]);
  return out + (shape.size() == 1 ? ",)" : ")");
}

// The expression that creates a tensor like the harness's seeded generator
// would, from the same distribution (see tensor_init.cpp).
std::string init_expr(const TensorSpec& spec) {
  const std::string shape = py_shape(spec.shape);
  const std::string dtype = "dtype=torch." + std::string(dtype_name(spec.dtype));
  const std::string empty = "torch.empty(" + shape + ", " + dtype + ")";
  const Init& init = spec.init;
  switch (init.dist) {
    case Dist::rand:
      return "torch.rand(" + shape + ", " + dtype + ")";
    case Dist::randn:
      return "torch.randn(" + shape + ", " + dtype + ")";
    case Dist::uniform:
      return empty + ".uniform_(" + py_float(init.a) + ", " + py_float(init.b) + ")";
    case Dist::normal:
      return empty + ".normal_(" + py_float(init.a) + ", " + py_float(init.b) + ")";
    case Dist::kaiming_uniform: {
      // 9 significant digits round-trip the float32 bound.
      std::string bound = py_float(kaiming_bound(spec), 9);
      return empty + ".uniform_(-" + bound + ", " + bound + ")";
    }
    case Dist::ones:
      return "torch.ones(" + shape + ", " + dtype + ")";
    case Dist::zeros:
      return "torch.zeros(" + shape + ", " + dtype + ")";
    case Dist::randint: {
      // Integer tensors draw from [ceil(lo), ceil(hi)); floating ones floor a uniform draw.
      auto low = int64_t(is_floating(spec.dtype) ? std::floor(init.a) : std::ceil(init.a));
      auto high = std::max(low + 1, int64_t(std::ceil(init.b)));
      return "torch.randint(" + std::to_string(low) + ", " + std::to_string(high) + ", " + shape + ", " + dtype + ")";
    }
    case Dist::constant: {
      // Integer tensors truncate the value, as the harness does.
      std::string value = is_floating(spec.dtype) ? py_float(init.a) : std::to_string(int64_t(init.a));
      return "torch.full(" + shape + ", " + value + ", " + dtype + ")";
    }
    // The same values as the harness: the file holds them.
    case Dist::file:
      return "safetensors.torch.load_file(" + py_string(init.path) + ")[" + py_string(init.key) + "]";
  }
  return empty;
}

// `base.name`, or getattr() where `name` is not a plain Python name.
std::string py_attribute(const std::string& base, std::string_view name) {
  if (is_python_name(name)) return base + "." + std::string(name);
  return "getattr(" + base + ", " + py_string(name) + ")";
}

std::string py_call(const Node& node, const PyNames& names) {
  auto colons = node.op.find("::");
  std::string ns = colons == std::string::npos ? "aten" : node.op.substr(0, colons);
  std::string name = colons == std::string::npos ? node.op : node.op.substr(colons + 2);
  std::string callee = py_attribute(py_attribute(py_attribute("torch.ops", ns), name),
                                    node.overload.empty() ? "default" : node.overload);

  std::vector<std::string> args;
  for (const auto& arg : node.args) args.push_back(py_value(arg, names));
  std::string unusual_kwargs;  // keys that are keywords go through **{...}
  for (auto it = node.kwargs.begin(); it != node.kwargs.end(); ++it) {
    std::string value = py_value(it.value(), names);
    if (is_python_name(it.key())) {
      args.push_back(it.key() + "=" + value);
      continue;
    }
    unusual_kwargs += (unusual_kwargs.empty() ? "" : ", ") + py_string(it.key()) + ": " + value;
  }
  if (!unusual_kwargs.empty()) args.push_back("**{" + unusual_kwargs + "}");

  std::string out = callee + "(";
  for (size_t i = 0; i < args.size(); ++i) out += (i > 0 ? ", " : "") + args[i];
  return out + ")";
}

// "xs[1]" as an output name reads one element of a list-valued result.
std::string py_output(const std::string& name, const PyNames& names) {
  return py_string_arg("%" + name, names);
}

std::string header(std::string_view title) {
  std::string out;
  size_t start = 0;
  while (start < title.size()) {
    size_t end = std::min(title.find('\n', start), title.size());
    std::string_view line = title.substr(start, end - start);
    if (line.ends_with('\r')) line.remove_suffix(1);
    out += line.empty() ? "#\n" : "# " + std::string(line) + "\n";
    start = end + 1;
  }
  if (!out.empty()) out += "#\n";
  out +=
      "# Generated by cuda-agent from the task IR. This is the reference a kernel\n"
      "# must match. Inputs and params drawn here follow the same distributions as\n"
      "# the harness's seeded generator, but they are not the same numbers.\n";
  return out;
}

}  // namespace

std::string render_model_py(const Program& program, std::string_view title) {
  PyNames names(program);
  std::string out = header(title);
  bool reads_files = !param_files(program).empty();
  out += std::string(reads_files ? "import safetensors.torch\n" : "") +
         "import torch\n\n\nclass Model(torch.nn.Module):\n";
  out += "    def __init__(self):\n        super().__init__()\n";
  for (const auto& spec : program.params) {
    const std::string& id = names.id(spec.name);
    if (is_floating(spec.dtype)) {
      out += "        self." + id + " = torch.nn.Parameter(" + init_expr(spec) + ")\n";
      continue;
    }
    out += "        self.register_buffer(" + py_string(id) + ", " + init_expr(spec) + ")\n";
  }

  out += "\n    def forward(self";
  for (const auto& spec : program.inputs) out += ", " + names.id(spec.name);
  out += "):\n";
  for (const auto& node : program.nodes) {
    out += "        ";
    for (size_t k = 0; k < node.outputs.size(); ++k) out += (k > 0 ? ", " : "") + names.id(node.outputs[k]);
    out += (node.outputs.empty() ? "" : " = ") + py_call(node, names) + "\n";  // an op that returns nothing
  }
  out += "        return ";
  for (size_t i = 0; i < program.outputs.size(); ++i) out += (i > 0 ? ", " : "") + py_output(program.outputs[i], names);
  out += "\n\n\ndef get_inputs():\n";
  std::string list;
  for (const auto& spec : program.inputs) {
    out += "    " + names.id(spec.name) + " = " + init_expr(spec) + "\n";
    list += (list.empty() ? "" : ", ") + names.id(spec.name);
  }
  out += "    return [" + list + "]\n\n\ndef get_init_inputs():\n    return []\n";
  return out;
}

}  // namespace ca
