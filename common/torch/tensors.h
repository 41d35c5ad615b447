// Tensors for a program's inputs and params, made from its seed with the
// project's own generator (ir/tensor_init.h), and dtype mapping to ATen.
#pragma once

#include <cstdint>
#include <expected>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "ir/program.h"

namespace ca {

at::ScalarType to_scalar_type(DType dtype);
/// The IR dtype of an ATen scalar type, or nullopt for types tasks do not use (complex, fp8, ...).
std::optional<DType> from_scalar_type(at::ScalarType type);

/// Makes one tensor on `device` with the bytes make_tensor_bytes gives: drawn on the
/// GPU for a CUDA device (on its current stream; file inits are read and copied),
/// on the CPU otherwise. Throws (TORCH_CHECK) when a file init cannot be read.
at::Tensor make_tensor(const TensorSpec& spec, uint64_t seed, uint64_t stream, const at::Device& device);

/// Makes the program's inputs, then its params; tensor i uses stream i.
std::vector<at::Tensor> make_tensors(const Program& program, uint64_t seed, const at::Device& device);

/// The digest (ir/tensor_digest.h) of the tensor's bytes in row-major order (those of tensor.contiguous()),
/// computed where the tensor lies: on its GPU, on its current stream, for a CUDA tensor. Returns a CUDA error as a
/// message.
std::expected<std::string, std::string> tensor_digest(const at::Tensor& tensor);

/// Uninitialized tensors of the right shapes and dtypes on the meta device.
std::vector<at::Tensor> make_meta_tensors(const Program& program);

}  // namespace ca
