// The command-line conventions every tool shares: --help and --version on
// stdout with exit 0, usage errors as one line plus a hint with exit 64,
// and the common flags -j/--jobs, --seed, -q/--quiet, -v/--verbose.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "util/exit_codes.h"

namespace ca {

struct CommonOptions {
  unsigned jobs = 1;
  uint64_t seed = 0;
  bool quiet = false;
  bool verbose = false;
};

class ToolCli {
 public:
  /// `name` is the executable ("ca-crawl"); it also becomes the log prefix.
  ToolCli(std::string name, std::string description);

  CLI::App& app() { return m_app; }
  /// For tools whose jobs each hold a lot of memory (a GPU's worth of tensors): -j's default and its help text.
  void default_jobs(unsigned jobs, const std::string& help);
  /// For tools that draw secret seeds unless --seed is given (ca-verify, ca-profile): --help says so, not "0".
  void secret_seed_default();
  const CommonOptions& common() const { return m_common; }

  /// Parses argv. Returns the code to exit with when parsing ends the run
  /// (--help, --version, a usage error), or nullopt to go on.
  std::optional<ExitCode> parse(int argc, char** argv);

 private:
  std::string m_name;
  CLI::App m_app;
  CommonOptions m_common;
};

/// Reports a usage error the way parse() does (one line and a hint); returns ExitCode::usage.
ExitCode usage_error(std::string_view message);

}  // namespace ca
