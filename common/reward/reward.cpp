#include "reward/reward.h"

#include <cmath>
#include <cstdio>

#include "util/json_field.h"
#include "util/spell.h"

namespace ca {
namespace {

struct RuleName {
  RewardRule rule;
  const char* name;
};
constexpr RuleName k_rules[] = {
    {RewardRule::paper, "paper"}, {RewardRule::binary, "binary"}, {RewardRule::log_speedup, "log-speedup"}};

const char* rule_name(RewardRule rule) {
  for (const auto& r : k_rules) {
    if (r.rule == rule) return r.name;
  }
  return "?";
}

// Three decimals, or three significant digits for a speedup too large for them (1e40 is "1.00e+40", not cut off).
std::string fixed(double value) {
  char text[32];
  std::snprintf(text, sizeof text, value < 1e6 ? "%.3f" : "%.2e", value);
  return text;
}

// A positive speedup from profile.speedup.<key>, or nullopt.
std::optional<double> speedup(const Json& profile, const char* key) {
  auto speedups = profile.find("speedup");
  if (speedups == profile.end() || !speedups->is_object()) return std::nullopt;
  auto value = speedups->find(key);
  if (value == speedups->end() || !value->is_number() || !(value->get<double>() > 0)) return std::nullopt;
  return value->get<double>();
}

Json reward(double value, RewardRule rule, std::string reason) {
  // The discrete rules give integers; keep them integers in the record.
  Json number = rule == RewardRule::log_speedup ? Json(value) : Json(int64_t(value));
  return {{"value", number}, {"rule", rule_name(rule)}, {"reason", std::move(reason)}};
}

}  // namespace

std::vector<std::string> reward_rule_names() {
  std::vector<std::string> names;
  for (const auto& r : k_rules) names.emplace_back(r.name);
  return names;
}

std::expected<RewardRule, std::string> parse_reward_rule(std::string_view name) {
  for (const auto& r : k_rules) {
    if (name == r.name) return r.rule;
  }
  return std::unexpected("unknown rule '" + std::string(name) + "'" + did_you_mean(name, reward_rule_names()) +
                         " (one of " + quoted_list(reward_rule_names()) + ")");
}

std::expected<Json, std::string> add_reward(const Json& record, const RewardOptions& options) {
  auto verify = require_field(record, "verify", "");
  if (!verify) return std::unexpected(verify.error() + " (run ca-verify first)");
  auto ok = require_field(**verify, "ok", "verify");
  if (!ok) return std::unexpected(ok.error());
  if (!(*ok)->is_boolean()) return std::unexpected("verify.ok: expected a boolean, got " + json_type(**ok));

  Json out = record;
  RewardRule rule = options.rule;
  if (!(*ok)->get<bool>()) {
    std::string stage = (*verify)->value("stage", "?");
    out["reward"] =
        reward(-1, rule, "verification failed at stage '" + stage + "': " + (*verify)->value("message", ""));
    return out;
  }
  auto profile = record.find("profile");
  bool profiled = profile != record.end() && profile->is_object();
  // A candidate that was wrong while timed (docs/EXPLOITS.md, B12) or faster than physics (C10) is wrong.
  if (profiled && profile->value("ok", true) == false && !profile->contains("skipped")) {
    out["reward"] = reward(
        -1, rule, "profiling failed at stage '" + profile->value("stage", "?") + "': " + profile->value("message", ""));
    return out;
  }
  auto vs_eager = profiled ? speedup(*profile, "vs_eager") : std::nullopt;
  auto vs_compile = profiled ? speedup(*profile, "vs_compile") : std::nullopt;
  if (rule == RewardRule::binary || !vs_eager) {
    out["reward"] =
        reward(1, rule,
               rule == RewardRule::binary ? "correct" : "correct; no eager timing in profile, so speed earns nothing");
    return out;
  }
  if (rule == RewardRule::log_speedup) {
    double base = vs_compile ? *vs_compile : *vs_eager;
    out["reward"] = reward(
        1 + std::max(0.0, std::log2(base)), rule,
        "correct; speedup " + fixed(base) + "x over " + (vs_compile ? "compile" : "eager (no compile baseline)"));
    return out;
  }
  std::string speeds = "speedup " + fixed(*vs_eager) + "x over eager, " +
                       (vs_compile ? fixed(*vs_compile) + "x over compile" : "no compile baseline");
  if (*vs_eager > options.eager_threshold && vs_compile && *vs_compile > options.compile_threshold) {
    out["reward"] = reward(3, rule, "correct and faster than eager and compile (" + speeds + ")");
  } else if (*vs_eager > options.eager_threshold) {
    out["reward"] =
        reward(2, rule,
               std::string(vs_compile ? "correct and faster than eager only"
                                      : "correct and faster than eager; capped at 2 without a compile baseline") +
                   " (" + speeds + ")");
  } else {
    out["reward"] = reward(1, rule, "correct, not faster than eager by the threshold (" + speeds + ")");
  }
  return out;
}

}  // namespace ca
