// The typed grammar of the built-in composer: which usable ops it can call,
// and how it fills each schema argument (tensors from earlier values or new
// inputs and params, literals by type and argument name, dims valid for the
// rank). Filling is a guess; the interpreter decides on meta shapes.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "ir/program.h"
#include "torch/op_schema.h"
#include "util/jsonl.h"

namespace ca {

/// One usable op with its schema as LibTorch's dispatcher declares it.
struct OpTemplate {
  std::string name;      // "aten::add"
  std::string overload;  // "Tensor"; "" for the default overload
  std::string category;  // from the op record
  OpSchema schema;
  std::string qualified_name() const { return overload.empty() ? name : name + "." + overload; }
};

/// Templates for the records with usable: true whose op the dispatcher knows,
/// in record order; `skipped` counts the usable records it does not know.
std::vector<OpTemplate> op_templates(const std::vector<Json>& records, size_t& skipped);

/// The composer's random source: mt19937_64 with portable draws (no
/// std::*_distribution, whose results differ between standard libraries).
class Rng {
 public:
  explicit Rng(uint64_t seed) : m_engine(seed) {}
  /// The source of item `index` (a task, a request) of a run seeded with `seed`: each item draws from its own, so an
  /// item does not depend on the draws of those before it, and a resumed run can skip the finished ones and still
  /// make what an uninterrupted run makes. std::seed_seq's mixing is specified exactly, hence portable too.
  static Rng for_item(uint64_t seed, uint64_t index) {
    std::seed_seq mixed{uint32_t(seed), uint32_t(seed >> 32), uint32_t(index), uint32_t(index >> 32)};
    return Rng(mixed);
  }
  uint64_t next() { return m_engine(); }
  /// Uniform in [0, n); n > 0.
  uint64_t below(uint64_t n) { return m_engine() % n; }
  /// Uniform in [0, 1).
  double unit() { return double(m_engine() >> 11) * 0x1.0p-53; }
  bool chance(double p) { return unit() < p; }
  template <typename T>
  const T& pick(const std::vector<T>& items) {
    return items[below(items.size())];
  }

 private:
  explicit Rng(std::seed_seq& seeds) : m_engine(seeds) {}
  std::mt19937_64 m_engine;
};

/// A value a new node may read.
struct SynthValue {
  std::string name;
  std::vector<int64_t> shape;
  bool floating = true;
};

/// What filling a node may use and add to.
struct FillContext {
  Program& program;                       // new inputs and params are appended here
  const std::vector<SynthValue>& values;  // inputs, params and results so far
  const SynthValue& primary;              // goes to the op's first tensor argument
  Rng& rng;
};

/// Fills every argument of `op` and returns the node (outputs named
/// `out_name`), or nullopt with `why` set when an argument has no rule.
std::optional<Node> fill_node(const OpTemplate& op, FillContext& context, const std::string& out_name,
                              std::string& why);

/// A first input of a random rank (2-5) with its batch dim first, sized
/// `batch`, and the other dims drawn from per-rank vocabularies.
std::vector<int64_t> first_input_shape(Rng& rng, int64_t batch);

}  // namespace ca
