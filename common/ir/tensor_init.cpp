// Compiled with -ffp-contract=off: every value must come out of the same
// sequence of IEEE operations on every machine (and in the CUDA twin).
#include "ir/tensor_init.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "ir/safetensors.h"

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

// Stores `values` converted to T, one after another, into `out`.
template <typename T, typename From, typename Convert>
void store_as(std::span<const From> values, std::vector<uint8_t>& out, Convert convert) {
  out.resize(values.size() * sizeof(T));
  for (size_t i = 0; i < values.size(); ++i) {
    T converted = convert(values[i]);
    std::memcpy(out.data() + i * sizeof(T), &converted, sizeof(T));
  }
}

}  // namespace

uint16_t float_to_half_bits(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
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
    if (rest > halfway || (rest == halfway && (half & 1u) != 0)) ++half;  // a carry makes the smallest normal, as it should
    return uint16_t(sign | half);
  }
  uint32_t half = (magnitude - (112u << 23)) >> 13;  // rebias the exponent from 127 to 15
  const uint32_t rest = magnitude & 0x1FFFu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u) != 0)) ++half;
  return uint16_t(sign | half);
}

uint16_t float_to_bfloat16_bits(float value) {
  if (std::isnan(value)) return 0x7FC0u;  // c10::BFloat16's quiet NaN
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  // c10's round_to_nearest_even: adding 0x7FFF plus the kept lsb carries exactly when rounding up is due.
  return uint16_t((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}

std::expected<std::vector<uint8_t>, std::string> make_tensor_bytes(const TensorSpec& spec, uint64_t seed, uint64_t stream) {
  if (spec.init.dist == Dist::file) return read_safetensors_tensor(spec.init.path, spec.init.key, spec.dtype, spec.shape);
  const auto count = size_t(spec.numel());
  std::vector<uint8_t> bytes;
  // float32 and int64 are drawn straight into the result: tensors reach GBs, and a second copy would double the peak.
  // operator new aligns to 16 bytes, enough for either type.
  if (spec.dtype == DType::float32) {
    bytes.resize(count * sizeof(float));
    fill_floats(spec, seed, stream, std::span<float>(reinterpret_cast<float*>(bytes.data()), count));
    return bytes;
  }
  if (spec.dtype == DType::int64) {
    bytes.resize(count * sizeof(int64_t));
    fill_ints(spec, seed, stream, std::span<int64_t>(reinterpret_cast<int64_t*>(bytes.data()), count));
    return bytes;
  }
  if (is_floating(spec.dtype)) {
    std::vector<float> values(count);
    fill_floats(spec, seed, stream, values);
    std::span<const float> in(values);
    switch (spec.dtype) {
      case DType::float64: store_as<double>(in, bytes, [](float v) { return double(v); }); break;
      case DType::float16: store_as<uint16_t>(in, bytes, float_to_half_bits); break;
      case DType::bfloat16: store_as<uint16_t>(in, bytes, float_to_bfloat16_bits); break;
      default: break;  // float32 was handled above
    }
    return bytes;
  }
  std::vector<int64_t> values(count);
  fill_ints(spec, seed, stream, values);
  std::span<const int64_t> in(values);
  // Narrowing keeps the low bits (two's complement), which is what ATen's static_cast does.
  switch (spec.dtype) {
    case DType::int32: store_as<int32_t>(in, bytes, [](int64_t v) { return int32_t(uint32_t(uint64_t(v))); }); break;
    case DType::int16: store_as<int16_t>(in, bytes, [](int64_t v) { return int16_t(uint16_t(uint64_t(v))); }); break;
    case DType::int8: store_as<int8_t>(in, bytes, [](int64_t v) { return int8_t(uint8_t(uint64_t(v))); }); break;
    case DType::uint8: store_as<uint8_t>(in, bytes, [](int64_t v) { return uint8_t(uint64_t(v)); }); break;
    case DType::boolean: store_as<uint8_t>(in, bytes, [](int64_t v) { return uint8_t(v != 0 ? 1 : 0); }); break;
    default: break;  // int64 was handled above
  }
  return bytes;
}

std::vector<std::string> param_files(const Program& program) {
  std::vector<std::string> files;
  for (const auto* specs : {&program.inputs, &program.params}) {
    for (const auto& spec : *specs) {
      if (spec.init.dist == Dist::file && std::find(files.begin(), files.end(), spec.init.path) == files.end()) {
        files.push_back(spec.init.path);
      }
    }
  }
  return files;
}

std::expected<void, std::string> check_file_inits(const Program& program) {
  for (const auto* specs : {&program.inputs, &program.params}) {
    for (const auto& spec : *specs) {
      if (spec.init.dist != Dist::file) continue;
      auto entries = read_safetensors_header(spec.init.path);
      if (!entries) return std::unexpected("tensor '" + spec.name + "': " + entries.error());
      auto it = std::find_if(entries->begin(), entries->end(), [&](const auto& e) { return e.key == spec.init.key; });
      if (it == entries->end()) return std::unexpected("tensor '" + spec.name + "': " + spec.init.path + ": no tensor '" + spec.init.key + "'");
      if (it->dtype != spec.dtype || it->shape != spec.shape) {
        return std::unexpected("tensor '" + spec.name + "': " + spec.init.path + ": tensor '" + spec.init.key +
                               "' differs from the spec in dtype or shape");
      }
    }
  }
  return {};
}

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
      case Dist::file: return;
    }
  }
}

void fill_ints(const TensorSpec& spec, uint64_t seed, uint64_t stream, std::span<int64_t> out) {
  if (spec.init.dist != Dist::randint) {
    // parse_program allows only constant distributions besides randint here (file inits are read, not filled).
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
