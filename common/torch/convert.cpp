#include "torch/convert.h"

#include "ir/dtype.h"
#include "torch/tensors.h"
#include "util/json_field.h"

namespace ca {

int ValueScope::add(const std::string& name, c10::TypePtr type) {
  int id = int(types.size());
  index[name] = id;
  types.push_back(std::move(type));
  return id;
}

namespace {

using Error = std::unexpected<std::string>;

ArgRecipe constant(c10::IValue value) {
  ArgRecipe recipe;
  recipe.constant = std::move(value);
  return recipe;
}

ArgRecipe device() {
  ArgRecipe recipe;
  recipe.kind = ArgRecipe::Kind::device;
  return recipe;
}

std::string type_name(const c10::Argument& argument) {
  return argument.real_type()->str();
}

Error mismatch(const std::string& path, const c10::Argument& argument, std::string_view wanted, const Json& given) {
  return Error(path + ": argument '" + argument.name() + "' (" + type_name(argument) + "): expected " +
               std::string(wanted) + ", got " +
               (given.is_string() ? "string '" + given.get<std::string>() + "'" : json_type(given)));
}

// Resolves "%x" or "%xs[1]" and checks the value's type against `wanted`.
std::expected<ValueRef, std::string> bind_ref(const Ref& ref, const c10::TypePtr& wanted, const std::string& path,
                                              const ValueScope& scope, const c10::Argument& argument) {
  int id = scope.index.at(ref.name);  // parse_program already rejected dangling references
  c10::TypePtr type = scope.types[size_t(id)];
  if (ref.index) {
    auto list = type->cast<c10::ListType>();
    if (!list) return Error(path + ": '%" + ref.name + "' is a " + type->str() + ", not a list");
    type = list->getElementType();
  }
  if (!type->isSubtypeOf(*wanted)) {
    return Error(path + ": argument '" + argument.name() + "' (" + type_name(argument) + "): '%" + ref.name +
                 (ref.index ? "[" + std::to_string(*ref.index) + "]" : "") + "' is a " + type->str());
  }
  return ValueRef{id, ref.index ? int(*ref.index) : -1};
}

std::expected<ArgRecipe, std::string> bind_tensor_list(const c10::Argument& argument, const Json& given,
                                                       const std::string& path, const ValueScope& scope,
                                                       bool optional_elements) {
  if (!given.is_array()) return mismatch(path, argument, "a list of references", given);
  ArgRecipe recipe;
  recipe.kind = optional_elements ? ArgRecipe::Kind::optional_tensor_list : ArgRecipe::Kind::tensor_list;
  for (size_t i = 0; i < given.size(); ++i) {
    if (given[i].is_null() && optional_elements) {
      recipe.list.push_back(std::nullopt);
      continue;
    }
    auto ref = parse_ref(given[i]);
    if (!ref) return mismatch(index_path(path, i), argument, "a tensor reference", given[i]);
    auto bound = bind_ref(*ref, c10::TensorType::get(), index_path(path, i), scope, argument);
    if (!bound) return Error(bound.error());
    recipe.list.push_back(*bound);
  }
  return recipe;
}

template <typename T, typename Check>
std::expected<ArgRecipe, std::string> bind_scalar_list(const c10::Argument& argument, const Json& given,
                                                       const std::string& path, std::string_view wanted,
                                                       Check is_item) {
  c10::List<T> list;
  if (is_item(given) && argument.N()) {
    // Python lets `stride=2` stand for `stride=[2, 2]` where the schema gives a
    // length; like Python, a list of another length is left to the op to judge.
    for (int i = 0; i < *argument.N(); ++i) list.push_back(given.get<T>());
    return constant(c10::IValue(std::move(list)));
  }
  if (!given.is_array()) return mismatch(path, argument, wanted, given);
  for (size_t i = 0; i < given.size(); ++i) {
    if (!is_item(given[i])) return mismatch(index_path(path, i), argument, wanted, given[i]);
    list.push_back(given[i].get<T>());
  }
  return constant(c10::IValue(std::move(list)));
}

bool is_int(const Json& j) {
  return j.is_number_integer();
}
// A float list's element: a number, or a non-finite literal ({"float": "-inf"}) read as its value.
bool is_float_item(const Json& j) {
  return j.is_number() || parse_special_float(j).has_value();
}
bool is_bool(const Json& j) {
  return j.is_boolean();
}

std::expected<c10::MemoryFormat, std::string> parse_memory_format(const std::string& name) {
  if (name == "contiguous_format") return c10::MemoryFormat::Contiguous;
  if (name == "preserve_format") return c10::MemoryFormat::Preserve;
  if (name == "channels_last") return c10::MemoryFormat::ChannelsLast;
  if (name == "channels_last_3d") return c10::MemoryFormat::ChannelsLast3d;
  return Error("one of 'contiguous_format', 'preserve_format', 'channels_last', 'channels_last_3d'");
}

// Converts a literal (not a reference) by the argument's type.
std::expected<ArgRecipe, std::string> bind_literal(const c10::Argument& argument, const c10::TypePtr& type,
                                                   const Json& given, const std::string& path,
                                                   const ValueScope& scope) {
  switch (type->kind()) {
    case c10::TypeKind::OptionalType: {
      auto element = type->castRaw<c10::OptionalType>()->getElementType();
      if (given.is_null()) {
        return element->kind() == c10::TypeKind::DeviceObjType ? device() : constant(c10::IValue());
      }
      return bind_literal(argument, element, given, path, scope);
    }
    case c10::TypeKind::TensorType:
      return mismatch(path, argument, "a tensor reference such as \"%x\"", given);
    case c10::TypeKind::ListType: {
      auto element = type->castRaw<c10::ListType>()->getElementType();
      switch (element->kind()) {
        case c10::TypeKind::TensorType:
          return bind_tensor_list(argument, given, path, scope, false);
        case c10::TypeKind::OptionalType:
          if (element->castRaw<c10::OptionalType>()->getElementType()->kind() == c10::TypeKind::TensorType) {
            return bind_tensor_list(argument, given, path, scope, true);
          }
          break;
        case c10::TypeKind::IntType:
        case c10::TypeKind::SymIntType:
          return bind_scalar_list<int64_t>(argument, given, path, "a list of integers", is_int);
        case c10::TypeKind::FloatType: {
          // nlohmann's numbers hold infinities and NaN in memory, so the literals become plain numbers here.
          Json numbers = given;
          if (numbers.is_array()) {
            for (auto& item : numbers) {
              if (auto special = parse_special_float(item)) item = *special;
            }
          } else if (auto special = parse_special_float(numbers)) {
            numbers = *special;
          }
          return bind_scalar_list<double>(argument, numbers, path, "a list of numbers", is_float_item);
        }
        case c10::TypeKind::BoolType:
          return bind_scalar_list<bool>(argument, given, path, "a list of booleans", is_bool);
        default:
          break;
      }
      break;
    }
    case c10::TypeKind::IntType:
    case c10::TypeKind::SymIntType:
      if (!given.is_number_integer()) return mismatch(path, argument, "an integer", given);
      return constant(c10::IValue(given.get<int64_t>()));
    case c10::TypeKind::FloatType:
      if (auto special = parse_special_float(given)) return constant(c10::IValue(*special));
      if (!given.is_number()) return mismatch(path, argument, "a number", given);
      return constant(c10::IValue(given.get<double>()));
    case c10::TypeKind::BoolType:
      if (!given.is_boolean()) return mismatch(path, argument, "a boolean", given);
      return constant(c10::IValue(given.get<bool>()));
    case c10::TypeKind::NumberType:
      // int and float scalars behave differently in ATen (type promotion), so keep the JSON kind.
      if (given.is_boolean()) return constant(c10::IValue(c10::Scalar(given.get<bool>())));
      if (given.is_number_integer()) return constant(c10::IValue(c10::Scalar(given.get<int64_t>())));
      if (given.is_number()) return constant(c10::IValue(c10::Scalar(given.get<double>())));
      if (auto special = parse_special_float(given)) return constant(c10::IValue(c10::Scalar(*special)));
      return mismatch(path, argument, "a number", given);
    case c10::TypeKind::StringType: {
      if (!given.is_string()) return mismatch(path, argument, "a string", given);
      std::string text = given.get<std::string>();
      if (text.starts_with("%%")) text.erase(0, 1);
      return constant(c10::IValue(text));
    }
    case c10::TypeKind::ScalarTypeType: {
      // Canonical names only, so model.py renders them as torch.<name>.
      auto dtype = given.is_string() ? parse_dtype(given.get<std::string>()) : std::nullopt;
      if (!dtype || dtype_name(*dtype) != given.get<std::string>())
        return mismatch(path, argument, "a dtype name such as \"float32\"", given);
      return constant(c10::IValue(to_scalar_type(*dtype)));
    }
    case c10::TypeKind::MemoryFormatType: {
      auto format = given.is_string() ? parse_memory_format(given.get<std::string>()) : Error("");
      if (!format) return mismatch(path, argument, "a memory format name", given);
      return constant(c10::IValue(*format));
    }
    case c10::TypeKind::LayoutType:
      if (given != "strided") return mismatch(path, argument, "\"strided\"", given);
      return constant(c10::IValue(c10::kStrided));
    case c10::TypeKind::DeviceObjType:
      return mismatch(path, argument, "null (programs run on one device, chosen by the caller)", given);
    case c10::TypeKind::GeneratorType:
      return mismatch(path, argument, "null (task programs are deterministic)", given);
    default:
      break;
  }
  return Error(path + ": argument '" + argument.name() + "' has type " + type_name(argument) +
               ", which task programs do not support");
}

}  // namespace

bool is_supported_argument_type(const c10::TypePtr& type) {
  switch (type->kind()) {
    case c10::TypeKind::OptionalType:
      return is_supported_argument_type(type->castRaw<c10::OptionalType>()->getElementType());
    case c10::TypeKind::ListType: {
      auto element = type->castRaw<c10::ListType>()->getElementType();
      if (element->kind() == c10::TypeKind::OptionalType) {
        return element->castRaw<c10::OptionalType>()->getElementType()->kind() == c10::TypeKind::TensorType;
      }
      auto kind = element->kind();
      return kind == c10::TypeKind::TensorType || kind == c10::TypeKind::IntType || kind == c10::TypeKind::SymIntType ||
             kind == c10::TypeKind::FloatType || kind == c10::TypeKind::BoolType;
    }
    case c10::TypeKind::TensorType:
    case c10::TypeKind::IntType:
    case c10::TypeKind::SymIntType:
    case c10::TypeKind::FloatType:
    case c10::TypeKind::BoolType:
    case c10::TypeKind::NumberType:
    case c10::TypeKind::StringType:
    case c10::TypeKind::ScalarTypeType:
    case c10::TypeKind::MemoryFormatType:
    case c10::TypeKind::LayoutType:
    case c10::TypeKind::DeviceObjType:
    case c10::TypeKind::GeneratorType:
      return true;
    default:
      return false;
  }
}

std::expected<ArgRecipe, std::string> bind_argument(const c10::Argument& argument, const Json* given,
                                                    const std::string& path, const ValueScope& scope) {
  const c10::TypePtr& type = argument.real_type();
  if (given == nullptr) {
    bool is_device = type->kind() == c10::TypeKind::DeviceObjType ||
                     (type->kind() == c10::TypeKind::OptionalType &&
                      type->castRaw<c10::OptionalType>()->getElementType()->kind() == c10::TypeKind::DeviceObjType);
    if (is_device) return device();
    if (argument.default_value()) return constant(*argument.default_value());
    return Error(path + ": missing argument '" + argument.name() + "' (" + type_name(argument) + ")");
  }
  if (auto ref = parse_ref(*given)) {
    auto bound = bind_ref(*ref, argument.type(), path, scope, argument);
    if (!bound) return Error(bound.error());
    ArgRecipe recipe;
    recipe.kind = ArgRecipe::Kind::ref;
    recipe.ref = *bound;
    return recipe;
  }
  return bind_literal(argument, type, *given, path, scope);
}

}  // namespace ca
