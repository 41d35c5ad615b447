// Seeded values for inputs and params, drawn with Philox from
// (seed, stream = the tensor's position in the program, element index).
// The same seed gives bit-identical tensors on every machine.
#pragma once

#include <cstdint>
#include <expected>
#include <span>
#include <string>
#include <vector>

#include "ir/program.h"
#include "ir/tensor_values.h"

namespace ca {

/// Fills `out` (spec.numel() values) for a floating-point spec, in float32;
/// callers round to narrower types. Distributions are documented in docs/IR.md;
/// a file init is not drawn (make_tensor_bytes reads it), so it leaves `out` as is.
void fill_floats(const TensorSpec& spec, uint64_t seed, uint64_t stream, std::span<float> out);

/// Fills `out` for an integer or bool spec.
void fill_ints(const TensorSpec& spec, uint64_t seed, uint64_t stream, std::span<int64_t> out);

/// The bytes of one tensor, in its dtype, contiguous: values from fill_floats/fill_ints then converted exactly as
/// LibTorch's Tensor.to(dtype) converts float32 (round to nearest even for float16/bfloat16; float64 exact) and int64
/// (truncation to narrower ints, nonzero -> true for bool). Both the trusted side and the runner make tensors
/// with it (or with its CUDA twin, ir/tensor_init_cuda.h), so their inputs are identical by construction. A file
/// init returns the file's bytes for its key (ir/safetensors.h); the error, the only one possible, names the file
/// and the key.
std::expected<std::vector<uint8_t>, std::string> make_tensor_bytes(const TensorSpec& spec, uint64_t seed,
                                                                   uint64_t stream);

/// make_tensor_bytes written into `out`, which must hold exactly spec.numel() * dtype_size(spec.dtype) bytes,
/// aligned for the dtype. Fails as make_tensor_bytes does.
std::expected<void, std::string> draw_tensor(const TensorSpec& spec, uint64_t seed, uint64_t stream,
                                             std::span<uint8_t> out);

/// The spec's init as the per-element draws of ir/tensor_values.h take it (not meaningful for a file init).
DrawParams draw_params(const TensorSpec& spec);

/// The distinct files that the program's file inits read, in order of first use
/// (as written: relative paths resolve against the current directory).
std::vector<std::string> param_files(const Program& program);

/// Checks that every file init names a readable file holding its key with the
/// spec's dtype and shape (reading headers only); errors name the tensor, file and key.
std::expected<void, std::string> check_file_inits(const Program& program);

/// The bound of kaiming_uniform: 1/sqrt(fan_in), fan_in = shape[1] * prod(shape[2:])
/// (shape[0] for 1-D), which is PyTorch's default Linear/Conv weight init.
float kaiming_bound(const TensorSpec& spec);

}  // namespace ca
