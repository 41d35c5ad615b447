#include "torch/op_schema.h"

#include <ATen/core/dispatch/Dispatcher.h>

namespace ca {
namespace {

ArgKind kind_of(const c10::Argument& argument, bool& optional) {
  c10::TypePtr type = argument.type();
  optional = type->kind() == c10::TypeKind::OptionalType;
  if (optional) type = type->castRaw<c10::OptionalType>()->getElementType();
  switch (type->kind()) {
    case c10::TypeKind::TensorType:
      return optional ? ArgKind::optional_tensor : ArgKind::tensor;
    case c10::TypeKind::ListType: {
      auto element = type->castRaw<c10::ListType>()->getElementType()->kind();
      if (element == c10::TypeKind::TensorType) return ArgKind::tensor_list;
      if (element == c10::TypeKind::IntType || element == c10::TypeKind::SymIntType) return ArgKind::int_list;
      if (element == c10::TypeKind::FloatType) return ArgKind::real_list;
      if (element == c10::TypeKind::BoolType) return ArgKind::bool_list;
      return ArgKind::other_tensor_list;
    }
    case c10::TypeKind::IntType:
    case c10::TypeKind::SymIntType:
      return ArgKind::integer;
    case c10::TypeKind::FloatType:
      return ArgKind::real;
    case c10::TypeKind::BoolType:
      return ArgKind::boolean;
    case c10::TypeKind::NumberType:
      return ArgKind::scalar;
    case c10::TypeKind::StringType:
      return ArgKind::string;
    case c10::TypeKind::ScalarTypeType:
      return ArgKind::scalar_type;
    default:
      return ArgKind::implicit;
  }
}

}  // namespace

std::optional<OpSchema> find_op_schema(std::string_view name, std::string_view overload) {
  auto handle = c10::Dispatcher::singleton().findSchema({std::string(name), std::string(overload)});
  if (!handle) return std::nullopt;
  OpSchema schema;
  for (const auto& argument : handle->schema().arguments()) {
    OpArgument& out = schema.arguments.emplace_back();
    out.name = argument.name();
    out.kind = kind_of(argument, out.optional);
    out.has_default = argument.default_value().has_value();
    out.kwarg_only = argument.kwarg_only();
    out.fixed_size = argument.N();
    out.type = argument.type()->str();
  }
  return schema;
}

}  // namespace ca
