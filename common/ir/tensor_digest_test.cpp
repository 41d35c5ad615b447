#include "ir/tensor_digest.h"

#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <string>
#include <vector>

namespace ca {
namespace {

std::vector<uint8_t> pattern(size_t n, uint8_t start = 0) {
  std::vector<uint8_t> bytes(n);
  for (size_t i = 0; i < n; ++i) bytes[i] = uint8_t(start + i * 37 + (i >> 8));
  return bytes;
}

// The definition written out word by word, one thread: digest_bytes (threads, memcpy loads) must agree with it.
std::string reference_digest(const std::vector<uint8_t>& bytes) {
  DigestSums sums;
  for (uint64_t i = 0; i * 8 < bytes.size(); ++i) {
    digest_add_word(sums, digest_word_at(bytes.data(), bytes.size(), i), i);
  }
  return finish_digest(sums, bytes.size());
}

TEST(TensorDigestTest, SameBytesGiveTheSameDigestAtAnyAlignment) {
  const std::vector<uint8_t> bytes = pattern(1001);
  std::vector<uint8_t> shifted(bytes.size() + 3);
  std::memcpy(shifted.data() + 3, bytes.data(), bytes.size());
  const std::string digest = digest_bytes(bytes.data(), bytes.size());
  EXPECT_EQ(digest.size(), 32u);
  EXPECT_EQ(digest, digest_bytes(std::vector<uint8_t>(bytes).data(), bytes.size()));
  EXPECT_EQ(digest, digest_bytes(shifted.data() + 3, bytes.size()));
  EXPECT_EQ(digest, reference_digest(bytes));
}

// Pinned (and checked against a Python transcription of tensor_digest.h), so that a change to the function is a
// decision: digests written by one build are read by another.
TEST(TensorDigestTest, KnownValues) {
  EXPECT_EQ(digest_bytes(nullptr, 0), finish_digest(DigestSums(), 0));
  EXPECT_EQ(digest_bytes(nullptr, 0), "7224d8a797fb2bc152674eb2aeee0145") << "empty";
  const std::vector<uint8_t> bytes = pattern(100);
  EXPECT_EQ(digest_bytes(bytes.data(), bytes.size()), "cfe55725b42a599a6b7e8635ae9ae82a") << "pattern(100)";
}

TEST(TensorDigestTest, EveryFlippedBitChangesTheDigest) {
  std::vector<uint8_t> bytes = pattern(203);  // not a whole number of words: the padded last word counts too
  const std::string original = digest_bytes(bytes.data(), bytes.size());
  std::set<std::string> seen = {original};
  for (size_t bit = 0; bit < bytes.size() * 8; ++bit) {
    bytes[bit / 8] ^= uint8_t(1u << (bit % 8));
    EXPECT_TRUE(seen.insert(digest_bytes(bytes.data(), bytes.size())).second) << "bit " << bit;
    bytes[bit / 8] ^= uint8_t(1u << (bit % 8));
  }
  EXPECT_EQ(digest_bytes(bytes.data(), bytes.size()), original);
}

TEST(TensorDigestTest, OrderAndLengthCount) {
  std::vector<uint8_t> bytes = pattern(64);
  const std::string original = digest_bytes(bytes.data(), bytes.size());
  std::vector<uint8_t> swapped = bytes;  // words 0 and 1 exchanged: the same words, elsewhere
  std::memcpy(swapped.data(), bytes.data() + 8, 8);
  std::memcpy(swapped.data() + 8, bytes.data(), 8);
  EXPECT_NE(digest_bytes(swapped.data(), swapped.size()), original);
  std::vector<uint8_t> longer = bytes;  // a zero byte appended fills the padding the shorter one had
  bytes.resize(61);
  longer.resize(62);
  longer[61] = 0;
  EXPECT_NE(digest_bytes(bytes.data(), bytes.size()), digest_bytes(longer.data(), longer.size()));
  const std::vector<uint8_t> zeros8(8, 0), zeros16(16, 0);
  EXPECT_NE(digest_bytes(zeros8.data(), 8), digest_bytes(zeros16.data(), 16));
}

TEST(TensorDigestTest, ThreadedSumsEqualTheDefinition) {
  // Past three threads' worth of words, and an odd tail.
  const std::vector<uint8_t> bytes = pattern((size_t(3) << 23) + 13, 5);
  EXPECT_EQ(digest_bytes(bytes.data(), bytes.size()), reference_digest(bytes));
}

}  // namespace
}  // namespace ca
