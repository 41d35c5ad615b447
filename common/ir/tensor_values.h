// Element i of a seeded tensor, as the bits its dtype stores: the one definition that the host (tensor_init.cpp)
// and the CUDA twin (tensor_init_cuda.cu) both run, so their bytes agree by construction. Call these only from
// files built without floating-point contraction or fast math (-ffp-contract=off; nvcc -fmad=false): a fused
// multiply-add or a flushed subnormal would change a rounding.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "ir/dist.h"
#include "ir/dtype.h"
#include "ir/philox.h"

namespace ca {

/// A spec's init in the form the draws use, made once per tensor on the host by draw_params (tensor_init.h).
struct DrawParams {
  Dist dist = Dist::randn;
  float a = 0, b = 1;  // float(init.a), float(init.b)
  float bound = 0;     // kaiming_uniform's bound
  int64_t low = 0;     // integer randint: ceil(lo); any other integer init: its value
  uint64_t range = 1;  // integer randint: max(1, ceil(hi) - ceil(lo))
};

/// Word k % 4 of a Philox block, picked without indexing, so that device code keeps the block in registers.
CA_HOST_DEVICE inline uint32_t philox_word(const Philox4& block, uint64_t k) {
  const uint64_t w = k % 4;
  return w == 0 ? block.v[0] : w == 1 ? block.v[1] : w == 2 ? block.v[2] : block.v[3];
}

CA_HOST_DEVICE inline float uniform_at(uint64_t seed, uint64_t stream, uint64_t index) {
  return uniform_from_bits(philox_word(philox4x32_10(index / 4, stream, seed), index));
}

/// Irwin-Hall: the sum of 12 uniforms minus 6 has mean 0 and variance 1. It needs only additions, so CPU and GPU
/// agree to the bit, which Box-Muller's log and cos would not promise. Values lie in [-6, 6].
CA_HOST_DEVICE inline float standard_normal_at(uint64_t seed, uint64_t stream, uint64_t index) {
  float sum = 0.0f;
  for (uint64_t block = 0; block < 3; ++block) {
    Philox4 bits = philox4x32_10(index * 3 + block, stream, seed);
    for (uint32_t word : bits.v) sum += uniform_from_bits(word);
  }
  return sum - 6.0f;
}

/// The dists whose float element i is a function of uniform_at(seed, stream, i) alone (float_from_uniform), so that
/// one Philox block gives four consecutive elements.
CA_HOST_DEVICE inline bool draws_one_uniform(Dist dist) {
  return dist == Dist::rand || dist == Dist::uniform || dist == Dist::kaiming_uniform || dist == Dist::randint;
}

/// A draws_one_uniform dist's float element from its uniform `u`.
CA_HOST_DEVICE inline float float_from_uniform(const DrawParams& p, float u) {
  switch (p.dist) {
    case Dist::uniform:
      return p.a + (p.b - p.a) * u;
    case Dist::kaiming_uniform:
      return (2.0f * u - 1.0f) * p.bound;
    case Dist::randint:
      return floorf(p.a + (p.b - p.a) * u);
    default:
      return u;
  }
}

/// Element i of a floating-point tensor, in float32 (a file init has no drawn values: 0).
CA_HOST_DEVICE inline float float_at(const DrawParams& p, uint64_t seed, uint64_t stream, uint64_t i) {
  switch (p.dist) {
    case Dist::rand:
    case Dist::uniform:
    case Dist::kaiming_uniform:
    case Dist::randint:
      return float_from_uniform(p, uniform_at(seed, stream, i));
    case Dist::randn:
      return standard_normal_at(seed, stream, i);
    case Dist::normal:
      return p.a + p.b * standard_normal_at(seed, stream, i);
    case Dist::ones:
      return 1.0f;
    case Dist::zeros:
      return 0.0f;
    case Dist::constant:
      return p.a;
    case Dist::file:
      return 0.0f;
  }
  return 0.0f;
}

/// Element i of an integer or bool tensor, in int64. Modulo bias is below 2^-24 relative for the small ranges
/// tasks use.
CA_HOST_DEVICE inline int64_t int_at(const DrawParams& p, uint64_t seed, uint64_t stream, uint64_t i) {
  if (p.dist != Dist::randint) return p.low;
  return p.low + int64_t(philox_word(philox4x32_10(i / 4, stream, seed), i) % p.range);
}

CA_HOST_DEVICE inline uint32_t float_bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

/// float32 -> float16 bits, rounding to nearest even as c10::Half does.
CA_HOST_DEVICE inline uint16_t float_to_half_bits(float value) {
  const uint32_t bits = float_bits(value);
  const auto sign = uint16_t((bits >> 16) & 0x8000u);
  const uint32_t magnitude = bits & 0x7FFFFFFFu;
  if (magnitude > 0x7F800000u) return sign | 0x7E00u;  // NaN: the canonical quiet NaN, as c10::Half gives
  // 65520 is halfway between 65504 (the largest half) and the next step; ties go to even, which is infinity.
  if (magnitude >= 0x477FF000u) return sign | 0x7C00u;
  if (magnitude < 0x38800000u) {
    // Below 2^-14 the half is subnormal: its integer mantissa is value * 2^24, rounded.
    const uint32_t exponent = magnitude >> 23;
    if (exponent < 102) return sign;  // below 2^-25, which rounds to zero
    const uint32_t mantissa = (magnitude & 0x7FFFFFu) | 0x800000u;
    const uint32_t shift = 126 - exponent;  // 14..24
    uint32_t half = mantissa >> shift;
    const uint32_t rest = mantissa & ((1u << shift) - 1);
    const uint32_t halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (half & 1u) != 0))
      ++half;  // a carry makes the smallest normal, as it should
    return uint16_t(sign | half);
  }
  uint32_t half = (magnitude - (112u << 23)) >> 13;  // rebias the exponent from 127 to 15
  const uint32_t rest = magnitude & 0x1FFFu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u) != 0)) ++half;
  return uint16_t(sign | half);
}

/// float32 -> bfloat16 bits, rounding to nearest even as c10::BFloat16 does.
CA_HOST_DEVICE inline uint16_t float_to_bfloat16_bits(float value) {
  const uint32_t bits = float_bits(value);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return 0x7FC0u;  // NaN: c10::BFloat16's quiet NaN
  // c10's round_to_nearest_even: adding 0x7FFF plus the kept lsb carries exactly when rounding up is due.
  return uint16_t((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}

/// Element<D>::bits(p, seed, stream, i) is element i as dtype D stores it, in an unsigned type of D's size
/// (Element<D>::type): floats are drawn in float32 and rounded as LibTorch's Tensor.to(dtype) rounds (to nearest even;
/// float64 exact); integers are drawn in int64 and narrowed to their low bits, as LibTorch's static_cast does; bool
/// is nonzero -> 1.
template <DType D>
struct Element;

template <>
struct Element<DType::float32> {
  using type = uint32_t;
  CA_HOST_DEVICE static type from_float(float value) { return float_bits(value); }
  CA_HOST_DEVICE static type bits(const DrawParams& p, uint64_t seed, uint64_t stream, uint64_t i) {
    return from_float(float_at(p, seed, stream, i));
  }
};
template <>
struct Element<DType::float64> {
  using type = uint64_t;
  CA_HOST_DEVICE static type from_float(float drawn) {
    const double value = double(drawn);
    type bits;
    std::memcpy(&bits, &value, sizeof bits);
    return bits;
  }
  CA_HOST_DEVICE static type bits(const DrawParams& p, uint64_t seed, uint64_t stream, uint64_t i) {
    return from_float(float_at(p, seed, stream, i));
  }
};
template <>
struct Element<DType::float16> {
  using type = uint16_t;
  CA_HOST_DEVICE static type from_float(float value) { return float_to_half_bits(value); }
  CA_HOST_DEVICE static type bits(const DrawParams& p, uint64_t seed, uint64_t stream, uint64_t i) {
    return from_float(float_at(p, seed, stream, i));
  }
};
template <>
struct Element<DType::bfloat16> {
  using type = uint16_t;
  CA_HOST_DEVICE static type from_float(float value) { return float_to_bfloat16_bits(value); }
  CA_HOST_DEVICE static type bits(const DrawParams& p, uint64_t seed, uint64_t stream, uint64_t i) {
    return from_float(float_at(p, seed, stream, i));
  }
};

/// The integer dtypes: int64's low bits (two's complement).
template <typename T>
struct IntElement {
  using type = T;
  CA_HOST_DEVICE static type bits(const DrawParams& p, uint64_t seed, uint64_t stream, uint64_t i) {
    return T(uint64_t(int_at(p, seed, stream, i)));
  }
};
template <>
struct Element<DType::int64> : IntElement<uint64_t> {};
template <>
struct Element<DType::int32> : IntElement<uint32_t> {};
template <>
struct Element<DType::int16> : IntElement<uint16_t> {};
template <>
struct Element<DType::int8> : IntElement<uint8_t> {};
template <>
struct Element<DType::uint8> : IntElement<uint8_t> {};
template <>
struct Element<DType::boolean> {
  using type = uint8_t;
  CA_HOST_DEVICE static type bits(const DrawParams& p, uint64_t seed, uint64_t stream, uint64_t i) {
    return int_at(p, seed, stream, i) != 0 ? 1 : 0;
  }
};

/// Calls f(Element<dtype>{}): one branch per tensor, so the loop inside f is specialised to the dtype.
template <typename F>
void visit_element(DType dtype, F&& f) {
  switch (dtype) {
    case DType::float32:
      f(Element<DType::float32>{});
      return;
    case DType::float64:
      f(Element<DType::float64>{});
      return;
    case DType::float16:
      f(Element<DType::float16>{});
      return;
    case DType::bfloat16:
      f(Element<DType::bfloat16>{});
      return;
    case DType::int64:
      f(Element<DType::int64>{});
      return;
    case DType::int32:
      f(Element<DType::int32>{});
      return;
    case DType::int16:
      f(Element<DType::int16>{});
      return;
    case DType::int8:
      f(Element<DType::int8>{});
      return;
    case DType::uint8:
      f(Element<DType::uint8>{});
      return;
    case DType::boolean:
      f(Element<DType::boolean>{});
      return;
  }
}

}  // namespace ca
