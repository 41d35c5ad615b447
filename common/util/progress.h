// A one-line progress report on stderr for long work, shown only when stderr
// is a terminal so logs and pipelines stay clean.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

namespace ca {

class Progress {
 public:
  /// `total` of 0 means unknown.
  Progress(std::string label, size_t total = 0);
  ~Progress();
  /// Counts one unit done; redraws at most ten times a second.
  void tick(std::string_view detail = "");

 private:
  std::string m_label;
  size_t m_total;
  size_t m_done = 0;
  bool m_enabled;
  std::chrono::steady_clock::time_point m_last_draw;
};

}  // namespace ca
