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

/// The step a long single job is in ("building", "round 2/5"), on one line of a terminal's stderr that the next step
/// replaces; `done` clears it. Nothing when stderr is not a terminal or the tool is quiet, so logs stay clean.
class ProgressSteps {
 public:
  explicit ProgressSteps(std::string label);
  ~ProgressSteps();
  void step(std::string_view what);

 private:
  std::string m_label;
  bool m_enabled;
  bool m_drawn = false;
};

}  // namespace ca
