// Diagnostics for every tool in one shape: `ca-x: error: <where>: <what>`.
// This and progress.h are the only places that write to stderr directly.
#pragma once

#include <string_view>

namespace ca {

enum class LogLevel { quiet, normal, verbose };

/// Sets the tool name that prefixes every diagnostic (e.g. "ca-crawl").
void set_tool_name(std::string_view name);
std::string_view tool_name();
void set_log_level(LogLevel level);
LogLevel log_level();

/// Writes `tool: error: where: what` (or `tool: error: what` when where is empty).
void error(std::string_view where, std::string_view what);
void error(std::string_view what);
void warning(std::string_view where, std::string_view what);
void warning(std::string_view what);
void note(std::string_view what);
/// Writes `tool: what` only at LogLevel::verbose.
void verbose(std::string_view what);

}  // namespace ca
