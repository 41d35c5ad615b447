// Device::fresh_input and input_changed on both backends, in-process: an input holds make_tensor_bytes's bytes
// (drawn on the GPU for cuda, a file init copied) and any changed byte is seen. The cuda test is skipped without a
// GPU; its suite is named CudaRunner... so that tests/gpu/run.sh's filter runs it.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "ir/safetensors.h"
#include "ir/tensor_init.h"
#include "runner/device.h"

#ifdef CA_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace ca {
namespace {

namespace fs = std::filesystem;

// Flips the last byte of the `bytes` at `data`, wherever the device keeps them.
using Corrupt = std::function<void(void* data, size_t bytes)>;

class DeviceInputs {
 public:
  DeviceInputs() {
    m_dir = fs::path(::testing::TempDir()) / ("ca-device-inputs-" + std::to_string(getpid()));
    fs::create_directories(m_dir);
    m_weights = (m_dir / "w.safetensors").string();
    std::vector<uint8_t> weights(6 * sizeof(float));
    for (size_t i = 0; i < weights.size(); ++i) weights[i] = uint8_t(i * 37 + 1);
    EXPECT_TRUE(write_safetensors(m_weights, {{"w", DType::float32, {2, 3}, weights}}));
  }
  ~DeviceInputs() { fs::remove_all(m_dir); }

  // Every input of one call: made, read back, unchanged; then each non-empty one corrupted and seen as changed.
  void check(Device& device, const Corrupt& corrupt) {
    const std::vector<TensorSpec> specs = {{"x", DType::float16, {1001}, {Dist::randn, 0, 1}},
                                           {"k", DType::int8, {13}, {Dist::randint, -100, 100}},
                                           {"m", DType::boolean, {5}, {Dist::randint, 0, 2}},
                                           {"w", DType::float32, {2, 3}, {Dist::file, 0, 1, m_weights, "w"}},
                                           {"e", DType::float32, {0}, {Dist::randn, 0, 1}}};
    const uint64_t seed = 77;
    std::vector<void*> inputs;
    for (size_t i = 0; i < specs.size(); ++i) {
      auto input = device.fresh_input(specs[i], seed, i, "input '" + specs[i].name + "'");
      ASSERT_TRUE(input) << input.error().message;
      inputs.push_back(*input);
      const std::vector<uint8_t> expected = make_tensor_bytes(specs[i], seed, i).value();
      std::vector<uint8_t> bytes(expected.size());
      auto copied = device.copy_out(*input, bytes);
      ASSERT_TRUE(copied) << copied.error().message;
      EXPECT_EQ(bytes, expected) << specs[i].name;
    }
    for (size_t i = 0; i < specs.size(); ++i) {
      auto changed = device.input_changed(inputs[i], specs[i], seed, i);
      ASSERT_TRUE(changed) << changed.error().message;
      EXPECT_FALSE(*changed) << specs[i].name;
      const size_t bytes = size_t(specs[i].numel()) * dtype_size(specs[i].dtype);
      if (bytes == 0) continue;
      corrupt(inputs[i], bytes);
      changed = device.input_changed(inputs[i], specs[i], seed, i);
      ASSERT_TRUE(changed) << changed.error().message;
      EXPECT_TRUE(*changed) << specs[i].name;
    }
    device.end_call();

    TensorSpec gone = {"g", DType::float32, {2, 3}, {Dist::file, 0, 1, (m_dir / "gone.safetensors").string(), "w"}};
    auto input = device.fresh_input(gone, seed, 0, "input 'g'");
    ASSERT_FALSE(input);
    EXPECT_EQ(input.error().failure, RunFailure::bad_request);
    EXPECT_NE(input.error().message.find("gone.safetensors"), std::string::npos) << input.error().message;
    device.end_call();
  }

 private:
  fs::path m_dir;
  std::string m_weights;
};

TEST(CpuDeviceInputsTest, InputsHoldTheDrawAndAnyChangeIsSeen) {
  auto device = make_cpu_device();
  DeviceInputs().check(*device, [](void* data, size_t bytes) {
    auto* last = static_cast<uint8_t*>(data) + bytes - 1;
    *last = uint8_t(~*last);
  });
}

#ifdef CA_WITH_CUDA
TEST(CudaRunnerInputsTest, InputsAreDrawnOnTheDeviceAndAnyChangeIsSeen) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  auto device = make_cuda_device(0);
  ASSERT_TRUE(device) << device.error().message;
  DeviceInputs().check(**device, [](void* data, size_t bytes) {
    auto* last = static_cast<uint8_t*>(data) + bytes - 1;
    uint8_t byte = 0;
    ASSERT_EQ(cudaMemcpy(&byte, last, 1, cudaMemcpyDeviceToHost), cudaSuccess);
    byte = uint8_t(~byte);
    ASSERT_EQ(cudaMemcpy(last, &byte, 1, cudaMemcpyHostToDevice), cudaSuccess);
  });
}
#endif

}  // namespace
}  // namespace ca
