#include "ir/tensor_digest.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>
#include <vector>

#include "util/slices.h"

namespace ca {
namespace {

// The words are read little-endian on both sides; a big-endian host would need a byte swap here.
static_assert(std::endian::native == std::endian::little);

constexpr uint64_t k_words_per_thread = uint64_t(1) << 20;  // 8 MB: below this a thread costs more than it saves

DigestSums sum_words(const uint8_t* data, uint64_t begin, uint64_t end) {
  DigestSums sums;
  for (uint64_t i = begin; i < end; ++i) {
    uint64_t word;
    std::memcpy(&word, data + i * 8, sizeof word);
    digest_add_word(sums, word, i);
  }
  return sums;
}

}  // namespace

std::string finish_digest(const DigestSums& sums, uint64_t nbytes) {
  char hex[33];
  std::snprintf(hex, sizeof hex, "%016llx%016llx",
                static_cast<unsigned long long>(digest_mix_a(sums.a ^ digest_mix_b(nbytes + 0xbb67ae8584caa73bull))),
                static_cast<unsigned long long>(digest_mix_b(sums.b + digest_mix_a(nbytes ^ 0x3c6ef372fe94f82bull))));
  return hex;
}

std::string digest_bytes(const void* data, uint64_t nbytes) {
  const auto* bytes = static_cast<const uint8_t*>(data);
  const uint64_t words = nbytes / 8;
  const uint64_t slices = slice_count(words, k_words_per_thread);
  std::vector<DigestSums> parts(slices);
  run_slices(slices, [&](uint64_t slice) {
    parts[slice] = sum_words(bytes, words * slice / slices, words * (slice + 1) / slices);
  });
  DigestSums total;
  for (const DigestSums& part : parts) {
    total.a += part.a;
    total.b += part.b;
  }
  if (nbytes % 8 != 0) digest_add_word(total, digest_word_at(bytes, nbytes, words), words);
  return finish_digest(total, nbytes);
}

}  // namespace ca
