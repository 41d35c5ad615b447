#include "ir/tensor_abi.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <expected>
#include <string>

#include "ir/program.h"
#include "ir/tensor_digest.h"
#include "ir/tensor_init.h"

#ifdef CA_WITH_CUDA
#include <cuda_runtime_api.h>

#include "ir/tensor_digest_cuda.h"
#include "ir/tensor_init_cuda.h"
#endif

namespace ca {
namespace {

using Error = std::unexpected<std::string>;

int report(const std::string& message, char* err, size_t err_size) {
  if (err != nullptr && err_size > 0) {
    const size_t n = std::min(message.size(), err_size - 1);
    std::memcpy(err, message.data(), n);
    err[n] = '\0';
  }
  return 1;
}

// The spec as parse_program reads an input, so that defaults and checks are the task's own.
std::expected<TensorSpec, std::string> parse_spec(const char* spec_json) {
  Json spec = Json::parse(spec_json == nullptr ? "" : spec_json, nullptr, false);
  if (spec.is_discarded() || !spec.is_object()) return Error("the spec is not a JSON object");
  const std::string name = spec.value("name", std::string("x"));
  auto program = parse_program(
      Json{{"inputs", Json::array({spec})}, {"nodes", Json::array()}, {"outputs", Json::array({name})}}, "spec");
  if (!program) return Error(program.error());
  return program->inputs.front();
}

#ifdef CA_WITH_CUDA
// Runs `body` with `device` current, then restores the caller's device.
template <typename Body>
std::expected<void, std::string> on_device(int device, Body body) {
  int previous = 0;
  if (cudaError_t error = cudaGetDevice(&previous); error != cudaSuccess) return Error(cudaGetErrorString(error));
  if (cudaError_t error = cudaSetDevice(device); error != cudaSuccess) {
    return Error("device " + std::to_string(device) + ": " + cudaGetErrorString(error));
  }
  cudaError_t error = body();
  cudaSetDevice(previous);
  if (error != cudaSuccess) return Error(cudaGetErrorString(error));
  return {};
}
#endif

std::expected<void, std::string> draw(const char* spec_json, uint64_t seed, uint64_t stream, void* out, uint64_t nbytes,
                                      int device, void* cuda_stream) {
  auto spec = parse_spec(spec_json);
  if (!spec) return Error(spec.error());
  const uint64_t expected = uint64_t(spec->numel()) * dtype_size(spec->dtype);
  if (nbytes != expected) {
    return Error("the buffer holds " + std::to_string(nbytes) + " bytes, the tensor " + std::to_string(expected));
  }
  if (device < 0) return draw_tensor(*spec, seed, stream, {static_cast<uint8_t*>(out), size_t(nbytes)});
#ifdef CA_WITH_CUDA
  auto stream_handle = static_cast<cudaStream_t>(cuda_stream);
  if (spec->init.dist == Dist::file) {
    auto bytes = make_tensor_bytes(*spec, seed, stream);
    if (!bytes) return Error(bytes.error());
    return on_device(device, [&] {
      cudaError_t error = cudaMemcpyAsync(out, bytes->data(), bytes->size(), cudaMemcpyHostToDevice, stream_handle);
      return error != cudaSuccess ? error : cudaStreamSynchronize(stream_handle);  // the host bytes die on return
    });
  }
  return on_device(device, [&] {
    return draw_on_device(draw_params(*spec), spec->dtype, uint64_t(spec->numel()), seed, stream, out, stream_handle);
  });
#else
  (void)cuda_stream;
  return Error("device " + std::to_string(device) + ": this library was built without CUDA");
#endif
}

std::expected<std::string, std::string> digest(const void* data, uint64_t nbytes, int device, void* cuda_stream) {
  if (device < 0) return digest_bytes(data, nbytes);
#ifdef CA_WITH_CUDA
  DigestSums sums;
  auto done =
      on_device(device, [&] { return digest_on_device(data, nbytes, static_cast<cudaStream_t>(cuda_stream), sums); });
  if (!done) return Error(done.error());
  return finish_digest(sums, nbytes);
#else
  (void)data;
  (void)cuda_stream;
  return Error("device " + std::to_string(device) + ": this library was built without CUDA");
#endif
}

}  // namespace
}  // namespace ca

// The C boundary: nothing may unwind into the caller (a ctypes call would abort the interpreter), so the one
// exception possible here, running out of host memory, becomes an error.
int ca_draw_tensor(const char* spec_json, uint64_t seed, uint64_t stream, void* out, uint64_t nbytes, int device,
                   void* cuda_stream, char* err, size_t err_size) {
  try {
    auto drawn = ca::draw(spec_json, seed, stream, out, nbytes, device, cuda_stream);
    return drawn ? 0 : ca::report(drawn.error(), err, err_size);
  } catch (const std::exception& error) {
    return ca::report(error.what(), err, err_size);
  }
}

int ca_tensor_digest(const void* data, uint64_t nbytes, int device, void* cuda_stream, char* hex, char* err,
                     size_t err_size) {
  try {
    auto digest = ca::digest(data, nbytes, device, cuda_stream);
    if (!digest) return ca::report(digest.error(), err, err_size);
    std::memcpy(hex, digest->c_str(), digest->size() + 1);
    return 0;
  } catch (const std::exception& error) {
    return ca::report(error.what(), err, err_size);
  }
}
