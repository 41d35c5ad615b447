// The CUDA twin of make_tensor_bytes against the host, bit for bit, for every dtype and init; skipped without a GPU.
// The suite is named CudaRunner... so that tests/gpu/run.sh's filter runs it: the runner draws its inputs with it.
#ifdef CA_WITH_CUDA

#include "ir/tensor_init_cuda.h"

#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include "ir/cuda_test_util.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "ir/tensor_init.h"
#include "runner/protocol.h"

namespace ca {
namespace {

class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes) { m_error = cudaMalloc(&m_data, std::max<size_t>(bytes, 1)); }
  ~DeviceBuffer() { cudaFree(m_data); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* data() const { return m_data; }
  cudaError_t error() const { return m_error; }

 private:
  void* m_data = nullptr;
  cudaError_t m_error;
};

std::string describe(const TensorSpec& spec, uint64_t seed, uint64_t stream) {
  return std::string(dtype_name(spec.dtype)) + " " + to_json(spec.init).dump() + " numel " +
         std::to_string(spec.numel()) + " seed " + std::to_string(seed) + " stream " + std::to_string(stream);
}

// Every init the IR allows for each dtype, with constants on float16/bfloat16 rounding ties, overflow edges and
// subnormals, over sizes that are not multiples of 4 (a Philox block), an empty tensor and a scalar.
std::vector<TensorSpec> every_spec() {
  const std::vector<double> constants = {1 + std::ldexp(1.0, -11),
                                         1 + 3 * std::ldexp(1.0, -11),
                                         65519,
                                         65520,
                                         -65520,
                                         std::ldexp(1.0, -25),
                                         3 * std::ldexp(1.0, -25),
                                         std::ldexp(1.0, -24),
                                         1 + std::ldexp(1.0, -8),
                                         1 + 3 * std::ldexp(1.0, -8),
                                         -259,
                                         1e-45,
                                         1e39,
                                         -0.0,
                                         0.1};
  std::vector<Init> float_inits = {{Dist::rand, 0, 1},
                                   {Dist::randn, 0, 1},
                                   {Dist::uniform, -70000, 70000},
                                   {Dist::uniform, -1e-6, 1e-6},
                                   {Dist::uniform, -1e-38, 1e-38},
                                   {Dist::normal, 3, 100},
                                   {Dist::kaiming_uniform, 0, 1},
                                   {Dist::ones, 0, 1},
                                   {Dist::zeros, 0, 1},
                                   {Dist::randint, -5.5, 7.25}};
  for (double value : constants) float_inits.push_back({Dist::constant, value, 1});
  const std::vector<Init> int_inits = {
      {Dist::randint, -300, 300},        {Dist::randint, -3e9, 3e9}, {Dist::randint, -2, 3}, {Dist::randint, 0, 2},
      {Dist::constant, 4294967297.0, 1}, {Dist::constant, -129, 1},  {Dist::ones, 0, 1},     {Dist::zeros, 0, 1}};
  const std::vector<std::vector<int64_t>> shapes = {{4099}, {7, 3}, {}, {0, 5}, {6, 5, 3, 3}};
  std::vector<TensorSpec> specs;
  for (DType dtype : {DType::float32, DType::float64, DType::float16, DType::bfloat16, DType::int64, DType::int32,
                      DType::int16, DType::int8, DType::uint8, DType::boolean}) {
    for (const Init& init : is_floating(dtype) ? float_inits : int_inits) {
      for (const auto& shape : shapes) {
        if (init.dist == Dist::kaiming_uniform && shape.empty()) continue;  // needs a dimension
        specs.push_back({"t", dtype, shape, init});
      }
    }
  }
  // Past 2^24 elements every thread of the largest grid draws more than one.
  specs.push_back({"big", DType::bfloat16, {(int64_t(1) << 24) + 5}, {Dist::uniform, -2, 2}});
  return specs;
}

TEST(CudaRunnerTensorInitTest, DeviceBytesEqualMakeTensorBytesForEveryDtypeAndInit) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  int checked = 0;
  for (const TensorSpec& spec : every_spec()) {
    // A 64-bit seed and a stream past 2^32 as well as small ones: both halves of Philox's key and counter.
    for (auto [seed, stream] :
         {std::pair<uint64_t, uint64_t>{11, 2}, {0x9E3779B97F4A7C15ull, (uint64_t(1) << 32) + 3}}) {
      const std::string what = describe(spec, seed, stream);
      const std::vector<uint8_t> expected = make_tensor_bytes(spec, seed, stream).value();
      DeviceBuffer buffer(expected.size());
      ASSERT_EQ(buffer.error(), cudaSuccess) << what;
      ASSERT_EQ(
          draw_on_device(draw_params(spec), spec.dtype, uint64_t(spec.numel()), seed, stream, buffer.data(), nullptr),
          cudaSuccess)
          << what;
      std::vector<uint8_t> got(expected.size());
      if (!got.empty()) {
        ASSERT_EQ(cudaMemcpy(got.data(), buffer.data(), got.size(), cudaMemcpyDeviceToHost), cudaSuccess) << what;
      }
      const auto mismatch = std::mismatch(got.begin(), got.end(), expected.begin());
      EXPECT_TRUE(mismatch.first == got.end())
          << what << ": first differing byte " << (mismatch.first - got.begin()) << " of " << got.size();
      ++checked;
    }
  }
  EXPECT_GT(checked, 1000);
}

TEST(CudaRunnerTensorInitTest, DiffersOnDeviceSeesAnyChangedByteAndNothingElse) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  for (const TensorSpec& spec : every_spec()) {
    const uint64_t seed = 5, stream = 1, count = uint64_t(spec.numel());
    const std::string what = describe(spec, seed, stream);
    const DrawParams params = draw_params(spec);
    const size_t bytes = count * dtype_size(spec.dtype);
    DeviceBuffer buffer(bytes);
    ASSERT_EQ(buffer.error(), cudaSuccess) << what;
    ASSERT_EQ(draw_on_device(params, spec.dtype, count, seed, stream, buffer.data(), nullptr), cudaSuccess) << what;
    bool differs = true;
    ASSERT_EQ(differs_on_device(params, spec.dtype, count, seed, stream, buffer.data(), nullptr, differs), cudaSuccess)
        << what;
    EXPECT_FALSE(differs) << what;
    if (count == 0) continue;
    // The last byte, flipped: the end of the grid's reach and, for floats, a bit of the sign (-0.0 is not 0.0).
    auto* last = static_cast<uint8_t*>(buffer.data()) + bytes - 1;
    uint8_t byte = 0;
    ASSERT_EQ(cudaMemcpy(&byte, last, 1, cudaMemcpyDeviceToHost), cudaSuccess) << what;
    byte = uint8_t(~byte);
    ASSERT_EQ(cudaMemcpy(last, &byte, 1, cudaMemcpyHostToDevice), cudaSuccess) << what;
    ASSERT_EQ(differs_on_device(params, spec.dtype, count, seed, stream, buffer.data(), nullptr, differs), cudaSuccess)
        << what;
    EXPECT_TRUE(differs) << what;
    // Another seed's tensor differs too, unless the init ignores the seed.
    ASSERT_EQ(draw_on_device(params, spec.dtype, count, seed + 1, stream, buffer.data(), nullptr), cudaSuccess) << what;
    ASSERT_EQ(differs_on_device(params, spec.dtype, count, seed, stream, buffer.data(), nullptr, differs), cudaSuccess)
        << what;
    EXPECT_EQ(differs,
              make_tensor_bytes(spec, seed, stream).value() != make_tensor_bytes(spec, seed + 1, stream).value())
        << what;
  }
}

// The runner poisons outputs on the device (fill_on_device) and counts poison on the host (count_poison): the
// bytes must be fill_poison's, for every element width and past one pass of the grid.
TEST(CudaRunnerTensorInitTest, FillOnDeviceWritesFillPoisonsBytesForEveryDtype) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  for (DType dtype : {DType::float32, DType::float64, DType::float16, DType::bfloat16, DType::int64, DType::int32,
                      DType::int16, DType::int8, DType::uint8, DType::boolean}) {
    for (uint64_t count : {uint64_t(0), uint64_t(1), uint64_t(4099), (uint64_t(1) << 24) + 3}) {
      const std::string what = std::string(dtype_name(dtype)) + " x " + std::to_string(count);
      const size_t bytes = count * dtype_size(dtype);
      std::vector<uint8_t> expected(bytes);
      fill_poison(dtype, expected);
      DeviceBuffer buffer(bytes);
      ASSERT_EQ(buffer.error(), cudaSuccess) << what;
      if (bytes > 0) {
        ASSERT_EQ(cudaMemset(buffer.data(), 0, bytes), cudaSuccess) << what;
      }
      const std::vector<uint8_t> element = poison_element(dtype);
      ASSERT_EQ(fill_on_device(buffer.data(), count, element.data(), element.size(), nullptr), cudaSuccess) << what;
      std::vector<uint8_t> got(bytes);
      if (bytes > 0) {
        ASSERT_EQ(cudaMemcpy(got.data(), buffer.data(), bytes, cudaMemcpyDeviceToHost), cudaSuccess) << what;
      }
      EXPECT_TRUE(got == expected) << what;
      EXPECT_EQ(count_poison(dtype, got), count) << what;
    }
  }
}

}  // namespace
}  // namespace ca

#endif  // CA_WITH_CUDA
