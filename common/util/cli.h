// The command-line conventions every tool shares: --help and --version on
// stdout with exit 0, usage errors as one line plus a hint with exit 64,
// the common flags -j/--jobs, --seed, -q/--quiet, -v/--verbose, and the
// range checks of numeric flags.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "util/exit_codes.h"
#include "util/journal.h"

namespace ca {

struct CommonOptions {
  unsigned jobs = 1;
  uint64_t seed = 0;
  bool quiet = false;
  bool verbose = false;
};

/// The largest magnitude a floating-point flag may have where its own check names no bound: beyond any count, rate or
/// duration a tool means, and small enough that no seconds or milliseconds flag overflows a timer.
inline constexpr double k_flag_magnitude_limit = 1e9;

/// A range check for a numeric flag, for ->check(): NaN, infinities, text that is no number and values outside the
/// range are usage errors that name the range in short numbers ("--timeout: 1e300 is not in (0, 1e6]"). `brackets`
/// says which ends are included: "[]", "(]", "[)" or "()".
CLI::Validator number_in(double low, double high, std::string_view brackets = "[]");
/// (0, high]: sizes, rates, factors.
CLI::Validator positive(double high = k_flag_magnitude_limit);
/// [0, high]: where 0 means none or off.
CLI::Validator non_negative(double high = k_flag_magnitude_limit);
/// [1, high]: how many of something to do or use (trials, rounds, threads, tasks).
CLI::Validator count(double high = k_flag_magnitude_limit);
/// A name from a fixed set, for enum-valued flags: anything else is a usage error that lists the set and suggests the
/// nearest name ("--tf32: 'pytorh' is not one of 'none', 'pytorch', 'all', did you mean 'pytorch'?").
CLI::Validator one_of(std::vector<std::string> names);
/// (0, 1e6] seconds, for timeouts and limits: a million seconds (11.6 days) outlasts any run, and beyond it a timer's
/// milliseconds overflow.
CLI::Validator seconds();

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
  /// --resume, on `app` (the tool, or each subcommand that runs long), for tools that journal their finished records
  /// beside their output (util/journal.h). `inputs` names the options whose values are the files records come from
  /// ("FILE", "--tasks"): the journal holds their digests, and the value of every other flag but -j, -q and -v, so
  /// a resume with other inputs or flags is refused.
  void add_resume_flag(CLI::App* app, std::vector<std::string> inputs);
  /// After parse(): the run's name for its journal, and whether --resume was given.
  JournalOptions journal_options() const;

  /// Parses argv. Returns the code to exit with when parsing ends the run
  /// (--help, --version, a usage error), or nullopt to go on. Every numeric flag of every tool is checked here,
  /// whatever its own check: NaN and infinities, a negative value for an unsigned one (which would wrap to 2^64-1),
  /// and a floating-point value beyond k_flag_magnitude_limit are usage errors; CLI11's stock PositiveNumber and
  /// NonNegativeNumber are replaced by positive() and non_negative(), whose errors print no 309-digit bound.
  std::optional<ExitCode> parse(int argc, char** argv);

 private:
  std::string m_name;
  CLI::App m_app;
  CommonOptions m_common;
  bool m_resume = false;
  std::vector<std::pair<CLI::App*, std::vector<std::string>>> m_resume_apps;  // where --resume is, and its inputs
};

/// Reports a usage error the way parse() does (one line and a hint); returns ExitCode::usage.
ExitCode usage_error(std::string_view message);

}  // namespace ca
