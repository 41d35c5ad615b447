// Compiled with -ffp-contract=off: every value must come out of the same
// sequence of IEEE operations on every machine (and in the CUDA twin).
#include "ir/tensor_init.h"

#include <algorithm>
#include <cmath>

namespace ca {
namespace {

float uniform_at(uint64_t seed, uint64_t stream, uint64_t index) {
  Philox4 block = philox4x32_10(index / 4, stream, seed);
  return uniform_from_bits(block.v[index % 4]);
}

// Irwin-Hall: the sum of 12 uniforms minus 6 has mean 0 and variance 1. It
// needs only additions, so CPU and GPU agree to the bit, which Box-Muller's
// log and cos would not promise. Values lie in [-6, 6].
float standard_normal_at(uint64_t seed, uint64_t stream, uint64_t index) {
  float sum = 0.0f;
  for (uint64_t block = 0; block < 3; ++block) {
    Philox4 bits = philox4x32_10(index * 3 + block, stream, seed);
    for (uint32_t word : bits.v) sum += uniform_from_bits(word);
  }
  return sum - 6.0f;
}

}  // namespace

float kaiming_bound(const TensorSpec& spec) {
  int64_t fan_in = spec.shape.size() == 1 ? spec.shape[0] : spec.shape[1];
  for (size_t i = 2; i < spec.shape.size(); ++i) fan_in *= spec.shape[i];
  return fan_in > 0 ? float(1.0 / std::sqrt(double(fan_in))) : 0.0f;
}

void fill_floats(const TensorSpec& spec, uint64_t seed, uint64_t stream, std::span<float> out) {
  const float a = float(spec.init.a), b = float(spec.init.b);
  const float bound = spec.init.dist == Dist::kaiming_uniform ? kaiming_bound(spec) : 0.0f;
  for (uint64_t i = 0; i < out.size(); ++i) {
    switch (spec.init.dist) {
      case Dist::rand: out[i] = uniform_at(seed, stream, i); break;
      case Dist::randn: out[i] = standard_normal_at(seed, stream, i); break;
      case Dist::uniform: out[i] = a + (b - a) * uniform_at(seed, stream, i); break;
      case Dist::normal: out[i] = a + b * standard_normal_at(seed, stream, i); break;
      case Dist::kaiming_uniform: out[i] = (2.0f * uniform_at(seed, stream, i) - 1.0f) * bound; break;
      case Dist::ones: out[i] = 1.0f; break;
      case Dist::zeros: out[i] = 0.0f; break;
      case Dist::randint: out[i] = std::floor(a + (b - a) * uniform_at(seed, stream, i)); break;
      case Dist::constant: out[i] = a; break;
    }
  }
}

void fill_ints(const TensorSpec& spec, uint64_t seed, uint64_t stream, std::span<int64_t> out) {
  if (spec.init.dist != Dist::randint) {
    // parse_program allows only constant distributions besides randint here.
    int64_t value = spec.init.dist == Dist::ones ? 1 : spec.init.dist == Dist::zeros ? 0 : int64_t(spec.init.a);
    std::fill(out.begin(), out.end(), value);
    return;
  }
  const auto low = int64_t(std::ceil(spec.init.a));
  const auto range = uint64_t(std::max<int64_t>(1, int64_t(std::ceil(spec.init.b)) - low));  // high is exclusive
  for (uint64_t i = 0; i < out.size(); ++i) {
    // Modulo bias is below 2^-24 relative for the small ranges tasks use.
    Philox4 bits = philox4x32_10(i / 4, stream, seed);
    out[i] = low + int64_t(bits.v[i % 4] % range);
  }
}

}  // namespace ca
