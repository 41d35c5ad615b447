#include "util/log.h"

#include <cstdio>
#include <string>

namespace ca {
namespace {

std::string g_tool = "ca";
LogLevel g_level = LogLevel::normal;

void emit(std::string_view kind, std::string_view where, std::string_view what) {
  std::string line = g_tool;
  line += ": ";
  if (!kind.empty()) {
    line += kind;
    line += ": ";
  }
  if (!where.empty()) {
    line += where;
    line += ": ";
  }
  line += what;
  line += '\n';
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace

void set_tool_name(std::string_view name) {
  g_tool = name;
}
std::string_view tool_name() {
  return g_tool;
}
void set_log_level(LogLevel level) {
  g_level = level;
}
LogLevel log_level() {
  return g_level;
}

void error(std::string_view where, std::string_view what) {
  emit("error", where, what);
}
void error(std::string_view what) {
  emit("error", "", what);
}

void warning(std::string_view where, std::string_view what) {
  if (g_level != LogLevel::quiet) emit("warning", where, what);
}
void warning(std::string_view what) {
  warning("", what);
}

void note(std::string_view what) {
  if (g_level != LogLevel::quiet) emit("note", "", what);
}

void verbose(std::string_view what) {
  if (g_level == LogLevel::verbose) emit("", "", what);
}

}  // namespace ca
