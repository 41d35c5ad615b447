// A 128-bit digest of a tensor's bytes, one function on the host (tensor_digest.cpp) and on a GPU
// (tensor_digest_cuda.cu), so that two processes can tell whether their tensors are bit-identical without moving
// them: ca-crawl kernelbench --digests and bridge/check_import.py (through libca_tensors.so, ir/tensor_abi.h).
// Header code is C++17 and host/device: nvcc compiles the kernel from it.
#pragma once

#include <cstdint>
#include <string>

#include "ir/philox.h"  // CA_HOST_DEVICE

namespace ca {

/// The digest before finishing: over the bytes read as little-endian 64-bit words (the last one zero-padded),
/// two sums of a bijective mix of (word XOR a key drawn from its index). A sum does not depend on the order its
/// terms are added in, so threads and blocks may add theirs in any order; one changed word always changes both
/// sums (the mix is a bijection), and any other change collides with odds of about 2^-128.
struct DigestSums {
  uint64_t a = 0;
  uint64_t b = 0;
};

/// SplitMix64's finalizer: a bijection of 64-bit words.
CA_HOST_DEVICE inline uint64_t digest_mix_a(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/// MurmurHash3's fmix64: another bijection, so that the two sums are not one sum twice.
CA_HOST_DEVICE inline uint64_t digest_mix_b(uint64_t x) {
  x = (x ^ (x >> 33)) * 0xff51afd7ed558ccdull;
  x = (x ^ (x >> 33)) * 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}

/// Adds word `index` (bytes 8 * index to 8 * index + 7) to the sums.
CA_HOST_DEVICE inline void digest_add_word(DigestSums& sums, uint64_t word, uint64_t index) {
  sums.a += digest_mix_a(word ^ digest_mix_b(index + 0x9e3779b97f4a7c15ull));
  sums.b += digest_mix_b(word ^ digest_mix_a(index ^ 0x6a09e667f3bcc908ull));
}

/// Word `index` of `nbytes` bytes at `data`, read a byte at a time (any alignment), zero-padded past the end.
CA_HOST_DEVICE inline uint64_t digest_word_at(const uint8_t* data, uint64_t nbytes, uint64_t index) {
  uint64_t word = 0;
  for (uint64_t byte = 0; byte < 8 && index * 8 + byte < nbytes; ++byte) {
    word |= uint64_t(data[index * 8 + byte]) << (8 * byte);
  }
  return word;
}

/// The digest of `nbytes` bytes whose words added up to `sums`: 32 lowercase hex digits. The length is mixed in,
/// so bytes and the same bytes with zeros appended differ.
std::string finish_digest(const DigestSums& sums, uint64_t nbytes);

/// The digest of `nbytes` bytes of host memory at `data` (any alignment; null when nbytes is 0), summed on up to 16
/// threads for large buffers.
std::string digest_bytes(const void* data, uint64_t nbytes);

}  // namespace ca
