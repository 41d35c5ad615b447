// The built-in policy: an episode is write variant -> verify -> (profile) -> next variant ..., then re-create the
// fastest passing variant and finish. What it does next depends only on the tool results it is given and the seed.
#include "policy/builtin/builtin_policy.h"

#include <algorithm>
#include <cstdlib>
#include <optional>

#include "policy/builtin/kernel_writer.h"
#include "policy/builtin/tool_results.h"

namespace ca {
namespace {

enum class Phase { start, wrote, verified, profiled, recreated, done };

class BuiltinPolicy final : public Policy {
 public:
  explicit BuiltinPolicy(const BuiltinOptions& options) : m_options(options) {}

  void begin(const EpisodeInfo& info) override {
    m_phase = Phase::start;
    m_backend = parse_backend(info.backend).value_or(Backend::cpu);
    m_attempts.clear();
    m_order.clear();
    m_program_error.clear();
    m_turn = 0;
    auto program = parse_program(info.task.value("program", Json::object()));
    if (!program) {
      m_program_error = program.error();
      return;
    }
    m_program = *program;
    // Variant 0 (the safest accumulation) first; the seed rotates the order of the rest, so samples differ.
    int count = kernel_variant_count(m_backend);
    int budget = std::clamp(m_options.variants, 1, count);
    m_order.push_back(0);
    for (int i = 1; i < budget; ++i) m_order.push_back(1 + static_cast<int>((info.seed + i - 1) % (count - 1)));
  }

  std::expected<AssistantTurn, PolicyError> next(const Json& messages, const Json& tools) override {
    ++m_turn;
    std::string result = last_tool_result(messages);
    m_has_profile = offers_tool(tools, "profile");
    switch (m_phase) {
      case Phase::start:
        return start();
      case Phase::wrote:
        return after_write(result);
      case Phase::verified:
        return after_verify(result);
      case Phase::profiled:
        return after_profile(result);
      case Phase::recreated:
        return finish_with_best();
      case Phase::done:
        break;
    }
    return finish("The episode is over.", Json::object());
  }

  Json describe() const override {
    return {{"name", "builtin"}, {"model", nullptr}, {"sampling", {{"variants", m_options.variants}}}};
  }

 private:
  struct Attempt {
    int variant = 0;
    std::string describe;
    std::string source;
    bool passed = false;
    std::optional<double> time_us;
  };

  std::expected<AssistantTurn, PolicyError> start() {
    if (!m_program_error.empty()) {
      Json uncovered = Json::array({{{"node", -1}, {"op", "program"}, {"reason", m_program_error}}});
      return finish("I cannot read this task's program: " + m_program_error, {{"uncovered", uncovered}});
    }
    auto probe = write_kernel(m_program, m_backend, 0);
    if (!probe) {
      Json uncovered = Json::array();
      std::string message = "This task is outside the patterns I write kernels for, so I finish without a kernel:";
      for (const Uncovered& node : probe.error()) {
        uncovered.push_back({{"node", node.node}, {"op", node.op}, {"reason", node.reason}});
        message += "\n- node " + std::to_string(node.node) + " (" + node.op + "): " + node.reason;
      }
      return finish(message, {{"uncovered", uncovered}});
    }
    return write_next();
  }

  // Writes the next variant of the order, or finishes when none is left.
  std::expected<AssistantTurn, PolicyError> write_next() {
    if (m_attempts.size() >= m_order.size()) return finish_with_best();
    int variant = m_order[m_attempts.size()];
    auto written = write_kernel(m_program, m_backend, variant);
    if (!written) return finish("The kernel writer failed on variant " + std::to_string(variant), Json::object());
    Attempt attempt;
    attempt.variant = variant;
    attempt.describe = written->variant;
    attempt.source = written->files.begin()->second;
    m_path = written->files.begin()->first;
    std::string patterns;
    for (const std::string& pattern : written->patterns) patterns += (patterns.empty() ? "" : ", ") + pattern;
    m_attempts.push_back(attempt);
    m_phase = Phase::wrote;
    std::string text = "Writing variant " + std::to_string(m_attempts.size()) + " of " +
                       std::to_string(m_order.size()) + " (" + attempt.describe +
                       "); the program fuses as: " + patterns + ".";
    return call(text, "str_replace_editor", {{"command", "create"}, {"path", m_path}, {"file_text", attempt.source}},
                {{"variant", variant}, {"patterns", written->patterns}});
  }

  std::expected<AssistantTurn, PolicyError> after_write(const std::string& result) {
    if (is_tool_error(result)) return finish("Writing the kernel failed: " + first_line(result), Json::object());
    m_phase = Phase::verified;
    return call("Checking it against the reference.", "verify", Json::object(), Json::object());
  }

  std::expected<AssistantTurn, PolicyError> after_verify(const std::string& result) {
    VerifyOutcome outcome = parse_verify(result);
    Attempt& attempt = m_attempts.back();
    attempt.passed = outcome.passed;
    if (!outcome.passed) {
      std::string text = "Variant " + std::to_string(m_attempts.size()) + " failed (" + outcome.failure +
                         "); trying the next variant.";
      if (m_attempts.size() >= m_order.size()) return finish_with_best();
      auto turn = write_next();
      if (turn) turn->content = text + "\n" + turn->content;
      return turn;
    }
    // Timing decides between variants only: with a budget of one there is nothing to choose.
    if (!m_has_profile || m_order.size() == 1) return write_next();
    m_phase = Phase::profiled;
    return call("It passes; timing it against eager and torch.compile.", "profile", Json::object(), Json::object());
  }

  std::expected<AssistantTurn, PolicyError> after_profile(const std::string& result) {
    m_attempts.back().time_us = parse_profile(result).candidate_us;
    return write_next();
  }

  // The fastest passing attempt (the first passing one when none was timed).
  const Attempt* best() const {
    const Attempt* chosen = nullptr;
    for (const Attempt& attempt : m_attempts) {
      if (!attempt.passed) continue;
      bool faster = chosen != nullptr && attempt.time_us && (!chosen->time_us || *attempt.time_us < *chosen->time_us);
      if (chosen == nullptr || faster) chosen = &attempt;
    }
    return chosen;
  }

  std::expected<AssistantTurn, PolicyError> finish_with_best() {
    const Attempt* chosen = best();
    if (chosen == nullptr) {
      return finish("None of the " + std::to_string(m_attempts.size()) + " variants passed verification.",
                    {{"variants_tried", m_attempts.size()}});
    }
    std::string timing = chosen->time_us ? " at " + std::to_string(*chosen->time_us) + " us" : "";
    Json extra = {{"kept_variant", chosen->variant}, {"variants_tried", m_attempts.size()}};
    if (m_phase != Phase::recreated && chosen != &m_attempts.back()) {
      m_phase = Phase::recreated;
      return call("Variant " + std::to_string(chosen - m_attempts.data() + 1) + " (" + chosen->describe +
                      ") was the fastest" + timing + "; writing it back.",
                  "str_replace_editor", {{"command", "create"}, {"path", m_path}, {"file_text", chosen->source}},
                  extra);
    }
    return finish(
        "Kept variant " + std::to_string(chosen - m_attempts.data() + 1) + " (" + chosen->describe + ")" + timing + ".",
        extra);
  }

  std::expected<AssistantTurn, PolicyError> call(const std::string& text, const std::string& tool,
                                                 const Json& arguments, Json extra) {
    AssistantTurn turn;
    turn.content = text;
    turn.tool_calls.push_back({"call_" + std::to_string(m_turn), tool, arguments.dump()});
    turn.finish_reason = "tool_calls";
    turn.extra = std::move(extra);
    return turn;
  }

  std::expected<AssistantTurn, PolicyError> finish(const std::string& message, Json extra) {
    m_phase = Phase::done;
    return call(message, "finish", {{"message", message}}, std::move(extra));
  }

  BuiltinOptions m_options;
  Phase m_phase = Phase::start;
  Backend m_backend = Backend::cpu;
  Program m_program;
  std::string m_program_error;
  std::vector<int> m_order;
  std::vector<Attempt> m_attempts;
  std::string m_path;
  bool m_has_profile = true;
  int m_turn = 0;
};

}  // namespace

std::unique_ptr<Policy> make_builtin_policy(const BuiltinOptions& options) {
  return std::make_unique<BuiltinPolicy>(options);
}

}  // namespace ca
