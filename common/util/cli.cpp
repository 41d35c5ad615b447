#include "util/cli.h"

#include <cctype>
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
  m_app.add_option("-j,--jobs", m_common.jobs, "Parallel jobs")->capture_default_str()->check(CLI::PositiveNumber);
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

namespace {

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
