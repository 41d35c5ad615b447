#include "aten/tensors.h"

#include "ir/tensor_init.h"

namespace ca {

at::ScalarType to_scalar_type(DType dtype) {
  switch (dtype) {
    case DType::float32: return at::kFloat;
    case DType::float64: return at::kDouble;
    case DType::float16: return at::kHalf;
    case DType::bfloat16: return at::kBFloat16;
    case DType::int64: return at::kLong;
    case DType::int32: return at::kInt;
    case DType::int16: return at::kShort;
    case DType::int8: return at::kChar;
    case DType::uint8: return at::kByte;
    case DType::boolean: return at::kBool;
  }
  return at::kFloat;
}

std::optional<DType> from_scalar_type(at::ScalarType type) {
  for (const auto& name : dtype_names()) {
    DType dtype = *parse_dtype(name);
    if (to_scalar_type(dtype) == type) return dtype;
  }
  return std::nullopt;
}

at::Tensor make_tensor(const TensorSpec& spec, uint64_t seed, uint64_t stream, const at::Device& device) {
  at::Tensor host;
  if (is_floating(spec.dtype)) {
    host = at::empty(spec.shape, at::TensorOptions().dtype(at::kFloat));
    fill_floats(spec, seed, stream, std::span<float>(host.data_ptr<float>(), size_t(host.numel())));
  } else {
    host = at::empty(spec.shape, at::TensorOptions().dtype(at::kLong));
    fill_ints(spec, seed, stream, std::span<int64_t>(host.data_ptr<int64_t>(), size_t(host.numel())));
  }
  return host.to(device, to_scalar_type(spec.dtype));
}

std::vector<at::Tensor> make_tensors(const Program& program, uint64_t seed, const at::Device& device) {
  std::vector<at::Tensor> tensors;
  uint64_t stream = 0;
  for (const auto& spec : program.inputs) tensors.push_back(make_tensor(spec, seed, stream++, device));
  for (const auto& spec : program.params) tensors.push_back(make_tensor(spec, seed, stream++, device));
  return tensors;
}

std::vector<at::Tensor> make_meta_tensors(const Program& program) {
  std::vector<at::Tensor> tensors;
  auto make = [&](const TensorSpec& spec) {
    tensors.push_back(at::empty(spec.shape, at::TensorOptions().dtype(to_scalar_type(spec.dtype)).device(at::kMeta)));
  };
  for (const auto& spec : program.inputs) make(spec);
  for (const auto& spec : program.params) make(spec);
  return tensors;
}

}  // namespace ca
