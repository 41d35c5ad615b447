#include "synth/mix.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace ca {

std::expected<OpCountMix, std::string> parse_mix(std::string_view text) {
  OpCountMix mix{};
  size_t count = 0;
  double total = 0;
  for (size_t start = 0; start <= text.size();) {
    size_t comma = std::min(text.find(',', start), text.size());
    std::string_view item = text.substr(start, comma - start);
    double value = 0;
    auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (ec != std::errc() || end != item.data() + item.size() || item.empty()) {
      return std::unexpected("--mix: '" + std::string(item) + "' is not a number");
    }
    if (value < 0 || !std::isfinite(value))
      return std::unexpected("--mix: weights must be finite and >= 0, got " + std::string(item));
    if (count < mix.size()) mix[count] = value;
    ++count;
    total += value;
    start = comma + 1;
  }
  if (count != mix.size())
    return std::unexpected("--mix: expected 5 numbers (tasks of 1..5 ops), got " + std::to_string(count));
  if (total <= 0) return std::unexpected("--mix: the weights are all zero");
  return mix;
}

std::string format_mix(const OpCountMix& mix) {
  std::string text;
  for (double weight : mix) {
    char number[32];
    std::snprintf(number, sizeof number, "%g", weight);
    text += (text.empty() ? "" : ",") + std::string(number);
  }
  return text;
}

MixSchedule::MixSchedule(const OpCountMix& mix) {
  double total = 0;
  for (double w : mix) total += w;
  for (size_t i = 0; i < mix.size(); ++i) m_share[i] = mix[i] / total;
}

int MixSchedule::next() {
  size_t best = 0;
  double best_deficit = -INFINITY;
  for (size_t i = 0; i < m_share.size(); ++i) {
    if (m_share[i] == 0) continue;
    double deficit = m_share[i] * (m_total + 1) - m_made[i];
    if (deficit > best_deficit + 1e-12) {
      best_deficit = deficit;
      best = i;
    }
  }
  return int(best) + 1;
}

void MixSchedule::made(int ops) {
  ++m_made[size_t(ops - 1)];
  ++m_total;
}

}  // namespace ca
