// ca-reward: add the episode reward to verified (and profiled) candidate records.
#include "reward/reward.h"
#include "util/cli.h"
#include "util/exceptions.h"
#include "util/record_loop.h"
#include "util/record_output.h"

using namespace ca;

int main(int argc, char** argv) try {
  ToolCli cli("ca-reward",
              "Add the reward (docs/RECORDS.md#reward) to candidate records that carry verify and profile results.");
  std::vector<std::string> inputs = {"-"};
  std::string output = "-";
  std::string rule_name = "paper";
  RewardOptions options;
  bool fail_fast = false;
  cli.app().add_option("FILE", inputs, "Candidate JSONL files, - for stdin")->capture_default_str();
  cli.app().add_option("-o,--output", output, "Output file, - for stdout")->capture_default_str();
  cli.app().add_option("--rule", rule_name, "Reward rule: paper, binary or log-speedup")->capture_default_str();
  cli.app()
      .add_option("--eager-threshold", options.eager_threshold, "Speedup over eager that counts as faster")
      ->capture_default_str()
      ->check(positive(1e6));
  cli.app()
      .add_option("--compile-threshold", options.compile_threshold, "Speedup over compile that counts as faster")
      ->capture_default_str()
      ->check(positive(1e6));
  cli.app().add_flag("--fail-fast", fail_fast, "Stop at the first bad record");
  if (auto code = cli.parse(argc, argv)) return to_int(*code);

  auto rule = parse_reward_rule(rule_name);
  if (!rule) return to_int(usage_error("--rule: " + rule.error()));
  options.rule = *rule;

  return to_int(write_records(output, [&](JsonlWriter& writer) {
    return transform_records(inputs, writer, fail_fast ? OnBadRecord::stop : OnBadRecord::skip,
                             [&](const Json& record) { return add_reward(record, options); });
  }));
} catch (...) {  // LibTorch's and the standard library's exceptions: util/exceptions.h
  return report_uncaught_exception();
}
