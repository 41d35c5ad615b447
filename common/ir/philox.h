// Philox4x32-10 (Salmon et al., SC'11), the counter-based generator behind
// every tensor the project makes from a seed. Header-only and usable from CUDA,
// so the trusted side and a GPU runner draw bit-identical values from the same
// (seed, stream, index) without moving tensors between processes.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define CA_HOST_DEVICE __host__ __device__
#else
#define CA_HOST_DEVICE
#endif

namespace ca {

struct Philox4 {
  uint32_t v[4];
};

CA_HOST_DEVICE inline Philox4 philox4x32_10(uint64_t counter_lo, uint64_t counter_hi, uint64_t key) {
  uint32_t c0 = uint32_t(counter_lo), c1 = uint32_t(counter_lo >> 32);
  uint32_t c2 = uint32_t(counter_hi), c3 = uint32_t(counter_hi >> 32);
  uint32_t k0 = uint32_t(key), k1 = uint32_t(key >> 32);
  for (int round = 0; round < 10; ++round) {
    uint64_t p0 = uint64_t(0xD2511F53u) * c0;
    uint64_t p1 = uint64_t(0xCD9E8D57u) * c2;
    uint32_t n0 = uint32_t(p1 >> 32) ^ c1 ^ k0;
    uint32_t n2 = uint32_t(p0 >> 32) ^ c3 ^ k1;
    c1 = uint32_t(p1);
    c3 = uint32_t(p0);
    c0 = n0;
    c2 = n2;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return {{c0, c1, c2, c3}};
}

/// A uniform float in [0, 1) with 24 random bits: exact in float32 everywhere.
CA_HOST_DEVICE inline float uniform_from_bits(uint32_t bits) {
  return float(bits >> 8) * (1.0f / 16777216.0f);
}

}  // namespace ca
