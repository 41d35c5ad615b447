// The op-count mix of synthesized tasks: how many have 1, 2, 3, 4 or 5 ops.
#pragma once

#include <array>
#include <expected>
#include <string>
#include <string_view>

namespace ca {

/// Weights of tasks with 1..5 ops; they need not sum to 100.
using OpCountMix = std::array<double, 5>;

/// The paper's set (CUDA-Agent-Ops-6K): 3.4% one op, 83.8% two, 7.6% three,
/// 2.8% four, 1.2% five.
constexpr OpCountMix k_paper_mix = {3.4, 83.8, 7.6, 2.8, 1.2};

/// Parses "3.4,83.8,7.6,2.8,1.2": five non-negative numbers, not all zero.
/// Errors say what is wrong ("--mix: expected 5 numbers, got 3").
std::expected<OpCountMix, std::string> parse_mix(std::string_view text);

/// "3.4,83.8,7.6,2.8,1.2": the form parse_mix reads.
std::string format_mix(const OpCountMix& mix);

/// Hands out op counts so that every prefix of the sequence follows the mix
/// as closely as whole tasks can: the next count is the one furthest behind
/// its share (largest deficit, ties to the smaller count). Deterministic, so
/// the first k tasks of a run do not depend on how many are asked for.
class MixSchedule {
 public:
  explicit MixSchedule(const OpCountMix& mix);
  /// The op count (1..5) for the next task.
  int next();
  /// Records that a task with `ops` ops was made; next() counts only these.
  void made(int ops);

 private:
  OpCountMix m_share{};
  std::array<int, 5> m_made{};
  int m_total = 0;
};

}  // namespace ca
