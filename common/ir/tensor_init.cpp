// Compiled with -ffp-contract=off: every value must come out of the same
// sequence of IEEE operations on every machine (and in the CUDA twin).
#include "ir/tensor_init.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "ir/safetensors.h"
#include "util/slices.h"

namespace ca {
namespace {

constexpr uint64_t k_elements_per_thread = uint64_t(1) << 16;  // below this a thread costs more than it saves

}  // namespace

std::expected<void, std::string> draw_tensor(const TensorSpec& spec, uint64_t seed, uint64_t stream,
                                             std::span<uint8_t> out) {
  if (spec.init.dist == Dist::file) {
    auto bytes = read_safetensors_tensor(spec.init.path, spec.init.key, spec.dtype, spec.shape);
    if (!bytes) return std::unexpected(bytes.error());
    std::copy_n(bytes->begin(), std::min(bytes->size(), out.size()), out.begin());
    return {};
  }
  const DrawParams params = draw_params(spec);
  visit_element(spec.dtype, [&](auto element) {
    using T = typename decltype(element)::type;
    T* values = reinterpret_cast<T*>(out.data());
    const uint64_t count = out.size() / sizeof(T);
    // Every element is a function of its index alone (counter-based Philox), so slices can be drawn on threads.
    // Drawing costs about 10 ns an element, which a profile pays twice per call on cpu.
    const uint64_t slices = slice_count(count, k_elements_per_thread);
    run_slices(slices, [&](uint64_t slice) {
      const uint64_t begin = count * slice / slices, end = count * (slice + 1) / slices;
      if constexpr (requires { element.from_float(0.0f); }) {
        if (draws_one_uniform(params.dist)) {
          // One Philox block a word, not one an element: the same values (float_at's own formula), a quarter of the
          // work; the profile draws every call's inputs on each side (bench/RESULTS.md, issue 24 item 6).
          for (uint64_t i = begin; i < end;) {
            const Philox4 block = philox4x32_10(i / 4, stream, seed);
            for (uint64_t word = i % 4; word < 4 && i < end; ++word, ++i) {
              values[i] = element.from_float(float_from_uniform(params, uniform_from_bits(block.v[word])));
            }
          }
          return;
        }
      }
      for (uint64_t i = begin; i < end; ++i) values[i] = element.bits(params, seed, stream, i);
    });
  });
  return {};
}

std::expected<std::vector<uint8_t>, std::string> make_tensor_bytes(const TensorSpec& spec, uint64_t seed,
                                                                   uint64_t stream) {
  // operator new aligns to 16 bytes, enough for every dtype.
  std::vector<uint8_t> bytes(size_t(spec.numel()) * dtype_size(spec.dtype));
  auto drawn = draw_tensor(spec, seed, stream, bytes);
  if (!drawn) return std::unexpected(drawn.error());
  return bytes;
}

DrawParams draw_params(const TensorSpec& spec) {
  DrawParams params;
  params.dist = spec.init.dist;
  params.a = float(spec.init.a);
  params.b = float(spec.init.b);
  params.bound = spec.init.dist == Dist::kaiming_uniform ? kaiming_bound(spec) : 0.0f;
  if (is_floating(spec.dtype)) return params;  // a float constant need not fit an int64
  if (spec.init.dist == Dist::randint) {
    params.low = int64_t(std::ceil(spec.init.a));
    params.range = uint64_t(std::max<int64_t>(1, int64_t(std::ceil(spec.init.b)) - params.low));  // high is exclusive
  } else {
    // parse_program allows only constant distributions besides randint for integers (file inits are read, not drawn).
    params.low = spec.init.dist == Dist::ones ? 1 : spec.init.dist == Dist::zeros ? 0 : int64_t(spec.init.a);
  }
  return params;
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
      if (it == entries->end())
        return std::unexpected("tensor '" + spec.name + "': " + spec.init.path + ": no tensor '" + spec.init.key + "'");
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
  if (spec.init.dist == Dist::file) return;
  const DrawParams params = draw_params(spec);
  for (uint64_t i = 0; i < out.size(); ++i) out[i] = float_at(params, seed, stream, i);
}

void fill_ints(const TensorSpec& spec, uint64_t seed, uint64_t stream, std::span<int64_t> out) {
  const DrawParams params = draw_params(spec);
  for (uint64_t i = 0; i < out.size(); ++i) out[i] = int_at(params, seed, stream, i);
}

}  // namespace ca
