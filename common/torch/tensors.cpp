#include "torch/tensors.h"

#include "ir/tensor_digest.h"
#include "ir/tensor_init.h"

#ifdef CA_WITH_CUDA
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "ir/tensor_digest_cuda.h"
#include "ir/tensor_init_cuda.h"
#endif

namespace ca {

at::ScalarType to_scalar_type(DType dtype) {
  switch (dtype) {
    case DType::float32:
      return at::kFloat;
    case DType::float64:
      return at::kDouble;
    case DType::float16:
      return at::kHalf;
    case DType::bfloat16:
      return at::kBFloat16;
    case DType::int64:
      return at::kLong;
    case DType::int32:
      return at::kInt;
    case DType::int16:
      return at::kShort;
    case DType::int8:
      return at::kChar;
    case DType::uint8:
      return at::kByte;
    case DType::boolean:
      return at::kBool;
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
  // The runner makes its inputs with the same draw_tensor (or, on a GPU, the same kernels), so both sides hold the
  // same bytes by construction.
  const auto options = at::TensorOptions().dtype(to_scalar_type(spec.dtype));
#ifdef CA_WITH_CUDA
  // Drawn where it lives, on the current stream: tensors reach GBs, and the host's draw would dominate.
  if (device.is_cuda() && spec.init.dist != Dist::file) {
    c10::cuda::CUDAGuard guard(device);
    at::Tensor tensor = at::empty(spec.shape, options.device(device));
    cudaError_t error = draw_on_device(draw_params(spec), spec.dtype, uint64_t(tensor.numel()), seed, stream,
                                       tensor.data_ptr(), c10::cuda::getCurrentCUDAStream().stream());
    TORCH_CHECK(error == cudaSuccess, "drawing tensor '", spec.name, "' on ", device, ": ", cudaGetErrorString(error));
    return tensor;
  }
#endif
  at::Tensor host = at::empty(spec.shape, options);
  auto drawn = draw_tensor(spec, seed, stream, {static_cast<uint8_t*>(host.data_ptr()), host.nbytes()});
  // Only a file init can fail; callers check files first (check_file_inits), so this means one changed since.
  TORCH_CHECK(drawn.has_value(), drawn.error());
  return host.to(device);
}

std::vector<at::Tensor> make_tensors(const Program& program, uint64_t seed, const at::Device& device) {
  std::vector<at::Tensor> tensors;
  uint64_t stream = 0;
  for (const auto& spec : program.inputs) tensors.push_back(make_tensor(spec, seed, stream++, device));
  for (const auto& spec : program.params) tensors.push_back(make_tensor(spec, seed, stream++, device));
  return tensors;
}

std::expected<std::string, std::string> tensor_digest(const at::Tensor& tensor) {
  const at::Tensor bytes = tensor.contiguous();
  const auto nbytes = uint64_t(bytes.nbytes());
#ifdef CA_WITH_CUDA
  if (bytes.is_cuda()) {
    c10::cuda::CUDAGuard guard(bytes.device());
    DigestSums sums;
    cudaError_t error = digest_on_device(bytes.data_ptr(), nbytes, c10::cuda::getCurrentCUDAStream().stream(), sums);
    if (error != cudaSuccess) {
      return std::unexpected("digest on " + bytes.device().str() + ": " + cudaGetErrorString(error));
    }
    return finish_digest(sums, nbytes);
  }
#endif
  if (!bytes.device().is_cpu()) {
    return std::unexpected("digest: tensors on " + bytes.device().str() + " are not supported");
  }
  return digest_bytes(bytes.data_ptr(), nbytes);
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
