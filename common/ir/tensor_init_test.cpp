#include "ir/tensor_init.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "ir/tensor_values.h"

namespace ca {
namespace {

// The draws of one uniform an element, written out as float_at wrote them before draw_tensor took four elements
// from each Philox block: the block path must give these bytes exactly.
float reference_float(const TensorSpec& spec, uint64_t seed, uint64_t stream, uint64_t i) {
  const DrawParams p = draw_params(spec);
  const float u = uniform_from_bits(philox_word(philox4x32_10(i / 4, stream, seed), i));
  switch (spec.init.dist) {
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

TEST(TensorInitTest, BlockDrawsEqualTheOneElementDefinition) {
  // More elements than one thread's slice, and a count that is not a multiple of 4, so slices begin mid-block.
  const int64_t rows = 3, cols = (int64_t(1) << 16) + 7;
  for (Dist dist : {Dist::rand, Dist::uniform, Dist::kaiming_uniform, Dist::randint}) {
    for (DType dtype : {DType::float32, DType::float64, DType::float16, DType::bfloat16}) {
      TensorSpec spec{"x", dtype, {rows, cols}, {dist, -2.5, 3}};
      auto bytes = make_tensor_bytes(spec, 1234567, 5);
      ASSERT_TRUE(bytes.has_value()) << bytes.error();
      visit_element(dtype, [&](auto element) {
        using T = typename decltype(element)::type;
        if constexpr (requires { element.from_float(0.0f); }) {
          ASSERT_EQ(bytes->size(), size_t(rows * cols) * sizeof(T));
          size_t wrong = 0, first = 0;
          for (uint64_t i = 0; i < uint64_t(rows * cols); ++i) {
            T got;
            std::memcpy(&got, bytes->data() + i * sizeof(T), sizeof(T));
            if (got != element.from_float(reference_float(spec, 1234567, 5, i)) && wrong++ == 0) first = i;
          }
          EXPECT_EQ(wrong, 0u) << "dist " << int(dist) << ", dtype " << int(dtype) << ", first at element " << first;
        }
      });
    }
  }
}

}  // namespace
}  // namespace ca
