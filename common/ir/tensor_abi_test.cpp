#include "ir/tensor_abi.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ir/tensor_digest.h"
#include "ir/tensor_init.h"

#ifdef CA_WITH_CUDA
#include <cuda_runtime.h>

#include "ir/cuda_test_util.h"
#endif

namespace ca {
namespace {

const char* k_spec = R"({"name": "x", "dtype": "bfloat16", "shape": [3, 5, 7], "init": {"uniform": [-2, 3]}})";

std::vector<uint8_t> expected_bytes() {
  TensorSpec spec{"x", DType::bfloat16, {3, 5, 7}, {Dist::uniform, -2, 3}};
  return make_tensor_bytes(spec, 42, 3).value();
}

TEST(TensorAbiTest, DrawsOnTheHostWhatMakeTensorBytesGives) {
  std::vector<uint8_t> out(3 * 5 * 7 * 2);
  char err[256] = "";
  ASSERT_EQ(ca_draw_tensor(k_spec, 42, 3, out.data(), out.size(), -1, nullptr, err, sizeof err), 0) << err;
  EXPECT_EQ(out, expected_bytes());
}

TEST(TensorAbiTest, DigestOnTheHostIsDigestBytes) {
  const std::vector<uint8_t> bytes = expected_bytes();
  char hex[33] = "";
  char err[256] = "";
  ASSERT_EQ(ca_tensor_digest(bytes.data(), bytes.size(), -1, nullptr, hex, err, sizeof err), 0) << err;
  EXPECT_EQ(std::string(hex), digest_bytes(bytes.data(), bytes.size()));
}

TEST(TensorAbiTest, BadSpecsAndSizesAreErrorsWithMessages) {
  std::vector<uint8_t> out(210);
  char err[256] = "";
  EXPECT_EQ(ca_draw_tensor("{not json", 0, 0, out.data(), out.size(), -1, nullptr, err, sizeof err), 1);
  EXPECT_STREQ(err, "the spec is not a JSON object");
  EXPECT_EQ(ca_draw_tensor(R"({"name": "x", "dtype": "float33", "shape": [2]})", 0, 0, out.data(), 8, -1, nullptr, err,
                           sizeof err),
            1);
  EXPECT_NE(std::string(err).find("unknown dtype 'float33'"), std::string::npos) << err;
  EXPECT_EQ(ca_draw_tensor(k_spec, 0, 0, out.data(), out.size() - 2, -1, nullptr, err, sizeof err), 1);
  EXPECT_STREQ(err, "the buffer holds 208 bytes, the tensor 210");
  char tiny[8] = "";  // a message is cut to fit, NUL included
  EXPECT_EQ(ca_draw_tensor("[]", 0, 0, out.data(), out.size(), -1, nullptr, tiny, sizeof tiny), 1);
  EXPECT_STREQ(tiny, "the spe");
}

#ifdef CA_WITH_CUDA
TEST(CudaDigestAbiTest, DrawsAndDigestsOnTheDeviceAsOnTheHost) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  const std::vector<uint8_t> expected = expected_bytes();
  void* device = nullptr;
  ASSERT_EQ(cudaMalloc(&device, expected.size()), cudaSuccess);
  char err[256] = "";
  ASSERT_EQ(ca_draw_tensor(k_spec, 42, 3, device, expected.size(), 0, nullptr, err, sizeof err), 0) << err;
  std::vector<uint8_t> got(expected.size());
  ASSERT_EQ(cudaMemcpy(got.data(), device, got.size(), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(got, expected);
  char hex[33] = "";
  ASSERT_EQ(ca_tensor_digest(device, expected.size(), 0, nullptr, hex, err, sizeof err), 0) << err;
  EXPECT_EQ(std::string(hex), digest_bytes(expected.data(), expected.size()));
  cudaFree(device);
}
#else
TEST(TensorAbiTest, DeviceMemoryNeedsACudaBuild) {
  std::vector<uint8_t> out(210);
  char err[256] = "";
  EXPECT_EQ(ca_draw_tensor(k_spec, 0, 0, out.data(), out.size(), 0, nullptr, err, sizeof err), 1);
  EXPECT_STREQ(err, "device 0: this library was built without CUDA");
}
#endif

}  // namespace
}  // namespace ca
