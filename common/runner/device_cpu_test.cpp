// Tests of the cpu Device in-process: fresh addresses, inputs, poison, copies out and scratch.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <set>

#include "runner/device.h"

namespace ca {
namespace {

TEST(CpuDeviceTest, BuffersHoldTheirContentsOrPoisonAtAddressesNeverHandedOutBefore) {
  auto device = make_cpu_device();
  std::set<const void*> seen;
  for (int call = 0; call < 4; ++call) {
    std::vector<uint8_t> contents(1 << 20, uint8_t(call + 1));
    TensorSpec spec{"x", DType::uint8, {1 << 20}, {Dist::constant, double(call + 1), 1}};
    auto input = device->fresh_input(spec, 0, 0, "input");
    ASSERT_TRUE(input) << input.error().message;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(*input) % 64, 0u);
    auto output = device->fresh_poisoned(DType::float32, 16, "output");
    ASSERT_TRUE(output) << output.error().message;
    EXPECT_TRUE(seen.insert(*input).second) << "call " << call;
    EXPECT_TRUE(seen.insert(*output).second) << "call " << call;

    std::vector<uint8_t> copied(contents.size());
    ASSERT_TRUE(device->copy_out(*input, copied));
    EXPECT_EQ(copied, contents);
    float first = 0;
    std::memcpy(&first, *output, 4);
    EXPECT_TRUE(std::isnan(first));
    EXPECT_EQ(count_poison(DType::float32, {static_cast<const uint8_t*>(*output), 16}), 4u);
    device->end_call();
  }
}

TEST(CpuDeviceTest, ScratchIsAlignedAndFilledWithFF) {
  auto device = make_cpu_device();
  ca_context ctx{};
  device->fill_context(ctx);
  EXPECT_EQ(ctx.device, CA_DEVICE_CPU);
  EXPECT_EQ(ctx.stream, nullptr);
  ASSERT_TRUE(device->before_call());
  auto* scratch = static_cast<uint8_t*>(device->scratch(100));
  ASSERT_NE(scratch, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(scratch) % 64, 0u);
  for (int i = 0; i < 100; ++i) ASSERT_EQ(scratch[i], 0xFF) << i;
  EXPECT_TRUE(device->after_call().cuda_error.empty());
  device->end_call();
}

TEST(CpuDeviceTest, CudaIsRefusedPlainlyWhereItCannotRun) {
  auto device = make_cuda_device(0);
  if (cuda_device_count() > 0) GTEST_SKIP() << "a GPU is present; device_cuda_test.cpp covers it";
  ASSERT_FALSE(device);
  const std::string& message = device.error().message;
#ifdef CA_WITH_CUDA
  EXPECT_EQ(device.error().failure, RunFailure::no_device);
  EXPECT_NE(message.find("no usable CUDA device"), std::string::npos) << message;
#else
  EXPECT_EQ(device.error().failure, RunFailure::bad_request);
  EXPECT_NE(message.find("built without the CUDA toolkit"), std::string::npos) << message;
#endif
}

}  // namespace
}  // namespace ca
