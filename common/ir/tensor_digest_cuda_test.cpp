// The device digest against the host's, bit for bit, at every alignment and past one pass of the grid; skipped
// without a GPU. tests/gpu/run.sh's filter runs the suite (CudaDigest*).
#ifdef CA_WITH_CUDA

#include "ir/tensor_digest_cuda.h"

#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include "ir/cuda_test_util.h"

#include <string>
#include <vector>

namespace ca {
namespace {

std::string device_digest(const uint8_t* data, uint64_t nbytes) {
  DigestSums sums;
  EXPECT_EQ(digest_on_device(data, nbytes, nullptr, sums), cudaSuccess);
  return finish_digest(sums, nbytes);
}

TEST(CudaDigestTest, DeviceDigestEqualsHostDigestAtEveryAlignment) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  // 2^16 blocks of 256 threads take 2^24 words a pass; the largest size takes two passes and a tail.
  for (uint64_t nbytes :
       {uint64_t(0), uint64_t(1), uint64_t(7), uint64_t(8), uint64_t(9), uint64_t(4099), (uint64_t(1) << 27) + 21}) {
    std::vector<uint8_t> host(nbytes + 8);
    for (size_t i = 0; i < host.size(); ++i) host[i] = uint8_t(i * 131 + (i >> 9));
    uint8_t* device = nullptr;
    ASSERT_EQ(cudaMalloc(&device, host.size()), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(device, host.data(), host.size(), cudaMemcpyHostToDevice), cudaSuccess);
    for (uint64_t offset : {0, 1, 3, 4}) {
      EXPECT_EQ(device_digest(device + offset, nbytes), digest_bytes(host.data() + offset, nbytes))
          << nbytes << " bytes at offset " << offset;
    }
    cudaFree(device);
  }
}

TEST(CudaDigestTest, OneFlippedBitChangesTheDeviceDigest) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  const uint64_t nbytes = (uint64_t(1) << 20) + 3;
  std::vector<uint8_t> host(nbytes, 0x5a);
  uint8_t* device = nullptr;
  ASSERT_EQ(cudaMalloc(&device, nbytes), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(device, host.data(), nbytes, cudaMemcpyHostToDevice), cudaSuccess);
  const std::string original = device_digest(device, nbytes);
  for (uint64_t at : {uint64_t(0), nbytes / 2, nbytes - 1}) {
    uint8_t byte = host[at] ^ 0x10;
    ASSERT_EQ(cudaMemcpy(device + at, &byte, 1, cudaMemcpyHostToDevice), cudaSuccess);
    EXPECT_NE(device_digest(device, nbytes), original) << "byte " << at;
    ASSERT_EQ(cudaMemcpy(device + at, &host[at], 1, cudaMemcpyHostToDevice), cudaSuccess);
  }
  EXPECT_EQ(device_digest(device, nbytes), original);
  cudaFree(device);
}

}  // namespace
}  // namespace ca

#endif  // CA_WITH_CUDA
