#include "util/progress.h"

#include <unistd.h>
#include <cstdio>

#include "util/log.h"

namespace ca {

Progress::Progress(std::string label, size_t total)
    : m_label(std::move(label)), m_total(total), m_enabled(isatty(STDERR_FILENO) && log_level() != LogLevel::quiet) {}

Progress::~Progress() {
  if (m_enabled && m_done > 0) std::fputs("\r\033[K", stderr);
}

void Progress::tick(std::string_view detail) {
  ++m_done;
  if (!m_enabled) return;
  auto now = std::chrono::steady_clock::now();
  if (now - m_last_draw < std::chrono::milliseconds(100) && m_done != m_total) return;
  m_last_draw = now;
  std::string line = "\r\033[K" + std::string(tool_name()) + ": " + m_label + " " + std::to_string(m_done);
  if (m_total > 0) line += "/" + std::to_string(m_total);
  if (!detail.empty()) line += " " + std::string(detail);
  std::fputs(line.c_str(), stderr);
}

ProgressSteps::ProgressSteps(std::string label)
    : m_label(std::move(label)), m_enabled(isatty(STDERR_FILENO) && log_level() != LogLevel::quiet) {}

ProgressSteps::~ProgressSteps() {
  if (m_drawn) std::fputs("\r\033[K", stderr);
}

void ProgressSteps::step(std::string_view what) {
  if (!m_enabled) return;
  std::string line = "\r\033[K" + std::string(tool_name()) + ": " + m_label + ": " + std::string(what) + "...";
  std::fputs(line.c_str(), stderr);
  m_drawn = true;
}

}  // namespace ca
