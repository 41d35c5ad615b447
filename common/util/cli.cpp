#include "util/cli.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <thread>

#include "util/log.h"
#include "util/signals.h"
#include "util/spell.h"

namespace ca {

ToolCli::ToolCli(std::string name, std::string description)
    : m_name(std::move(name)), m_app(std::move(description), m_name) {
  set_tool_name(m_name);
  m_common.jobs = std::max(1u, std::thread::hardware_concurrency());
  // As in most Unix tools, an option given twice takes its last value, so scripts can override a default set earlier.
  m_app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  m_app.set_version_flag("--version", m_name + " (cuda-agent) " CA_VERSION);
  m_app.add_option("-j,--jobs", m_common.jobs, "Parallel jobs")->capture_default_str()->check(count(4096));
  m_app.add_option("--seed", m_common.seed, "Seed for everything random")->capture_default_str();
  m_app.add_flag("-q,--quiet", m_common.quiet, "Print errors only");
  m_app.add_flag("-v,--verbose", m_common.verbose, "Print progress details");
  m_app.get_formatter()->column_width(28);
  // Common and tool-wide flags may follow a subcommand: `ca-crawl ops -o f`.
  m_app.fallthrough();
}

void ToolCli::secret_seed_default() {
  m_app.get_option("--seed")
      ->description("Reproduce a run with this seed (default: secret seeds from std::random_device, new each run)")
      ->default_str("");
}

void ToolCli::default_jobs(unsigned jobs, const std::string& help) {
  m_common.jobs = jobs;
  m_app.get_option("--jobs")->description(help)->default_str(std::to_string(jobs));
}

void ToolCli::add_resume_flag(CLI::App* app, std::vector<std::string> inputs) {
  m_resume_apps.emplace_back(app, std::move(inputs));
  app->add_flag("--resume", m_resume,
                "Carry on from the journal a run cut short left beside -o (OUTPUT.journal), with the same flags and "
                "inputs: its finished records are kept, not run again");
}

JournalOptions ToolCli::journal_options() const {
  JournalOptions options;
  options.resume = m_resume;
  options.tool = m_name;
  // Flags that change how a run goes, not what records it gives, may differ on resume.
  const std::vector<std::string> free = {"--help",  "--help-all", "--version", "--jobs",
                                         "--quiet", "--verbose",  "--resume"};
  auto add = [&](const CLI::App& app, const std::string& prefix) {
    for (const CLI::Option* option : app.get_options()) {
      const std::string name = option->get_name();
      if (std::find(free.begin(), free.end(), name) != free.end()) continue;
      bool input = false;
      for (const auto& [where, names] : m_resume_apps)
        input = input || (where == &app && std::find(names.begin(), names.end(), name) != names.end());
      if (input && option->count() > 0) {
        for (const auto& path : option->reduced_results()) options.inputs.push_back(path);
      }
      // The values the option takes (the last of a flag given twice), so `--scale 4 --scale 8` is `--scale 8`.
      const auto values = option->reduced_results();
      Json value = option->count() == 0 ? Json(option->get_default_str())
                   : values.size() == 1 ? Json(values.front())
                                        : Json(values);
      options.flags[prefix + name] = std::move(value);
    }
  };
  add(m_app, "");
  for (const CLI::App* sub : m_app.get_subcommands()) {
    options.tool += " " + sub->get_name();
    add(*sub, sub->get_name() + " ");
  }
  return options;
}

namespace {

// A number as a flag's error prints it: %g without the exponent's plus and leading zeros (1e6, 2.5e-5).
std::string short_number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  std::string out = text;
  if (auto e = out.find('e'); e != std::string::npos) {
    size_t digits = e + 1;
    if (out[digits] == '+') out.erase(digits, 1);
    if (out[digits] == '-') ++digits;
    while (digits + 1 < out.size() && out[digits] == '0') out.erase(digits, 1);
  }
  return out;
}

// The text of a flag's value as an error quotes it: at most 24 characters.
std::string quoted_value(const std::string& text) {
  return text.size() <= 24 ? text : text.substr(0, 21) + "...";
}

// The value of `text` when all of it is a number (strtod's syntax: nan and inf included).
std::optional<double> as_number(const std::string& text) {
  if (text.empty() || std::isspace(static_cast<unsigned char>(text[0]))) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  double value = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size()) return std::nullopt;
  return value;
}

}  // namespace

CLI::Validator number_in(double low, double high, std::string_view brackets) {
  const bool low_open = brackets.size() == 2 && brackets[0] == '(';
  const bool high_open = brackets.size() == 2 && brackets[1] == ')';
  const std::string range =
      std::string(low_open ? "(" : "[") + short_number(low) + ", " + short_number(high) + (high_open ? ")" : "]");
  // No description: --help shows the type as before; the man pages list the ranges.
  return CLI::Validator(
      [=](std::string& input) -> std::string {
        std::optional<double> value = as_number(input);
        if (!value) return quoted_value(input) + " is not a number";
        if (!std::isfinite(*value)) return quoted_value(input) + " is not a finite number";
        bool below = low_open ? *value <= low : *value < low;
        bool above = high_open ? *value >= high : *value > high;
        if (below || above) return quoted_value(input) + " is not in " + range;
        return "";
      },
      "", "RANGE");
}

CLI::Validator positive(double high) {
  return number_in(0, high, "(]");
}

CLI::Validator non_negative(double high) {
  return number_in(0, high);
}

CLI::Validator count(double high) {
  return number_in(1, high);
}

CLI::Validator seconds() {
  return number_in(0, 1e6, "(]");
}

CLI::Validator one_of(std::vector<std::string> names) {
  return CLI::Validator(
      [names](std::string& input) -> std::string {
        if (std::find(names.begin(), names.end(), input) != names.end()) return "";
        return "'" + quoted_value(input) + "' is not one of " + quoted_list(names) + did_you_mean(input, names);
      },
      "", "NAME");
}

namespace {

// Every option of `app` and of its subcommands, at any depth.
void collect_options(CLI::App& app, std::vector<CLI::Option*>& options) {
  for (CLI::Option* option : app.get_options([](const CLI::Option*) { return true; })) options.push_back(option);
  for (CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) collect_options(*sub, options);
}

// CLI11's stock ranges let NaN through and print DBL_MAX in full when they refuse: swap them for ours, which tools
// that still name CLI::PositiveNumber or CLI::NonNegativeNumber get without a change.
void replace_stock_ranges(CLI::App& app) {
  std::vector<CLI::Option*> options;
  collect_options(app, options);
  for (CLI::Option* option : options) {
    for (const auto& [name, ours] : {std::pair{"POSITIVE", positive()}, std::pair{"NONNEGATIVE", non_negative()}}) {
      try {
        *option->get_validator(name) = ours;
      } catch (const CLI::OptionNotFound&) {  // the option has no such check
      }
    }
  }
}

// The checks every numeric flag gets, whatever its own (ToolCli::parse): the first value that fails, as an error.
std::optional<std::string> numeric_flag_error(CLI::App& app) {
  std::vector<CLI::Option*> options;
  collect_options(app, options);
  for (const CLI::Option* option : options) {
    if (option->count() == 0) continue;
    const std::string type = option->get_type_name();
    const bool floating = type.starts_with("FLOAT"), is_unsigned = type.starts_with("UINT");
    if (!floating && !is_unsigned && !type.starts_with("INT")) continue;
    const std::string name = option->get_name();
    for (const std::string& text : option->results()) {
      std::optional<double> value = as_number(text);
      if (!value) continue;  // CLI11 refused it already, or it is a size with a suffix
      if (!std::isfinite(*value)) return name + ": " + quoted_value(text) + " is not a finite number";
      if (is_unsigned && *value < 0) return name + ": " + quoted_value(text) + " is negative; it must be at least 0";
      if (floating && std::abs(*value) > k_flag_magnitude_limit)
        return name + ": " + quoted_value(text) + " is not in [-" + short_number(k_flag_magnitude_limit) + ", " +
               short_number(k_flag_magnitude_limit) + "]";
    }
  }
  return std::nullopt;
}

std::string lowercase_first(std::string text) {
  // "The following ..." -> "the following ...", but "FILE is required" stays.
  bool capitalized_word = text.size() > 1 && std::isupper(static_cast<unsigned char>(text[0])) &&
                          std::islower(static_cast<unsigned char>(text[1]));
  if (capitalized_word) text[0] = char(std::tolower(static_cast<unsigned char>(text[0])));
  while (!text.empty() && (text.back() == '.' || text.back() == '\n')) text.pop_back();
  return text;
}

// Every name a user could have meant: long options and subcommands, at any depth.
void collect_names(const CLI::App& app, std::vector<std::string>& names) {
  for (const CLI::Option* option : app.get_options()) {
    for (const auto& name : option->get_lnames()) names.push_back("--" + name);
  }
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    names.push_back(sub->get_name());
    collect_names(*sub, names);
  }
}

std::string suggestion_for(const CLI::App& app, int argc, char** argv) {
  std::vector<std::string> names;
  collect_names(app, names);
  for (int i = 1; i < argc; ++i) {
    std::string word = argv[i];
    auto eq = word.find('=');
    if (word.starts_with("--") && eq != std::string::npos) word.resize(eq);
    if (std::find(names.begin(), names.end(), word) != names.end()) continue;
    std::string hint = did_you_mean(word, names);
    if (!hint.empty()) return hint;
  }
  return "";
}

}  // namespace

std::optional<ExitCode> ToolCli::parse(int argc, char** argv) {
  install_interrupt_handlers();
  replace_stock_ranges(m_app);
  try {
    m_app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::cout << m_app.help();
    return ExitCode::ok;
  } catch (const CLI::CallForAllHelp&) {
    std::cout << m_app.help("", CLI::AppFormatMode::All);
    return ExitCode::ok;
  } catch (const CLI::CallForVersion& e) {
    std::cout << e.what() << "\n";
    return ExitCode::ok;
  } catch (const CLI::ParseError& e) {
    std::string message = lowercase_first(e.what());
    // Unknown words end up as extras, or leave a required subcommand missing.
    if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr ||
        dynamic_cast<const CLI::RequiredError*>(&e) != nullptr) {
      message += suggestion_for(m_app, argc, argv);
    }
    return usage_error(message);
  }
  if (auto numeric = numeric_flag_error(m_app)) return usage_error(*numeric);
  if (m_common.quiet) set_log_level(LogLevel::quiet);
  if (m_common.verbose) set_log_level(LogLevel::verbose);
  return std::nullopt;
}

ExitCode usage_error(std::string_view message) {
  error(message);
  note("try '" + std::string(tool_name()) + " --help'");
  return ExitCode::usage;
}

}  // namespace ca
