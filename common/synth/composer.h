// The built-in composer behind ca-synth: tasks of 1-5 ops drawn from the
// usable op records, checked by the interpreter on small shapes, sized toward
// a target runtime by scaling the batch dim, checked again at full size as
// `ca-crawl tasks` checks them, and kept only when their fingerprint is new.
#pragma once

#include <array>
#include <cstdint>
#include <expected>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "synth/cost.h"
#include "synth/grammar.h"
#include "synth/mix.h"
#include "util/jsonl.h"

namespace ca {

struct SynthOptions {
  OpCountMix mix = k_paper_mix;
  double target_ms = 2;
  DeviceModel device;                       // the device the estimate is for
  int64_t max_elements = int64_t(1) << 28;  // no tensor of a task grows past this
  uint64_t seed = 0;
};

struct SynthStats {
  size_t candidates = 0;  // nodes filled and tried on the interpreter
  size_t accepted = 0;    // nodes it accepted
  size_t tasks = 0;       // tasks emitted
  size_t replayed = 0;    // of them, taken from a resumed run's journal (replay): composed before, not counted above
  std::array<size_t, 5> op_counts{};
  std::map<std::string, size_t> rejections;  // reason -> count
};

class Composer {
 public:
  Composer(std::vector<OpTemplate> ops, SynthOptions options);

  /// The next task record {kind:"task", id, source:"synth", program, seed,
  /// meta}, meta completed by check_task (ops, fingerprint, output_shapes)
  /// plus op_count and estimate {device, target_ms, ms, flops, bytes, batch}.
  /// Errors when no task of the scheduled op count came out of the budget.
  /// Task i draws from Rng::for_item(seed, i), so a run resumed after i tasks (replay) goes on as it would have.
  std::expected<Json, std::string> next();
  /// Takes `task`, a record next() made before (a resumed run's journal), as if next() had just made it: the mix,
  /// the count, the fingerprints and near-duplicates seen. Errors name what the record lacks.
  std::expected<void, std::string> replay(const Json& task);

  const SynthStats& stats() const { return m_stats; }
  /// One paragraph for stderr: tasks, acceptance, op counts, rejections.
  std::string summary(double seconds) const;

 private:
  struct Draft;
  std::expected<Draft, std::string> compose(int op_count);
  std::expected<Json, std::string> finish(const Draft& draft, int op_count);
  bool place_node(Draft& draft, int position);
  const OpTemplate& pick_op();
  void reject(const std::string& reason) { ++m_stats.rejections[reason]; }

  std::vector<OpTemplate> m_ops;
  std::map<std::string, std::vector<size_t>> m_by_category;
  std::vector<std::pair<std::string, double>> m_category_weights;
  SynthOptions m_options;
  MixSchedule m_schedule;
  Rng m_rng;
  SynthStats m_stats;
  std::set<std::string> m_fingerprints;
  std::set<std::string> m_near;  // op sequence + input and param shapes
};

}  // namespace ca
