#include "policy/factory.h"

#include <filesystem>
#include <map>
#include <mutex>
#include <optional>

#include "policy/builtin/builtin_policy.h"
#include "policy/openai_policy.h"
#include "policy/replay_policy.h"

namespace ca {
namespace {

std::mutex g_schemes_mutex;
std::map<std::string, SchemeMaker>& registered_schemes() {
  static std::map<std::string, SchemeMaker> schemes;
  return schemes;
}

std::optional<SchemeMaker> registered(const std::string& scheme) {
  std::lock_guard lock(g_schemes_mutex);
  auto found = registered_schemes().find(scheme);
  if (found == registered_schemes().end()) return std::nullopt;
  return found->second;
}

}  // namespace

void register_policy_scheme(const std::string& scheme, SchemeMaker maker) {
  std::lock_guard lock(g_schemes_mutex);
  registered_schemes()[scheme] = std::move(maker);
}

std::expected<std::unique_ptr<Policy>, std::string> make_policy(const std::string& spec, const PolicyOptions& options) {
  auto make = policy_maker(spec, options);
  if (!make) return std::unexpected(make.error().message);
  return (*make)();
}

std::expected<PolicyMaker, PolicySpecError> policy_maker(const std::string& spec, const PolicyOptions& options) {
  auto usage = [](std::string message) {
    return std::unexpected(PolicySpecError{std::move(message), ExitCode::usage});
  };
  auto colon = spec.find(':');
  std::string scheme = spec.substr(0, colon);
  std::string rest = colon == std::string::npos ? "" : spec.substr(colon + 1);
  if (scheme == "openai") {
    if (rest.empty()) return usage("openai:URL needs the API base URL, e.g. openai:http://127.0.0.1:8000/v1");
    return [rest, options] { return make_openai_policy(rest, options); };
  }
  if (scheme == "replay") {
    if (rest.empty()) return usage("replay:FILE needs a trajectory JSONL file");
    auto trajectories = load_trajectories(rest);
    if (!trajectories) {
      std::error_code ec;
      return std::unexpected(PolicySpecError{
          trajectories.error(), std::filesystem::exists(rest, ec) ? ExitCode::data_error : ExitCode::no_input});
    }
    auto shared = std::make_shared<const std::vector<Json>>(std::move(*trajectories));
    return [shared, rest] { return make_replay_policy(shared, rest); };
  }
  if (scheme == "builtin") {
    BuiltinOptions builtin;
    builtin.variants = options.builtin_variants;
    return [builtin] { return make_builtin_policy(builtin); };
  }
  if (auto maker = registered(scheme)) {
    if (rest.empty()) return usage(scheme + ": needs what follows the colon (" + scheme + ":PATH)");
    return (*maker)(rest, options);
  }
  if (scheme == "local") {
    return usage(
        "local:CKPT: this program was built without the LibTorch model (ca_model); ca-rollout has it, or serve the "
        "checkpoint with `ca-model serve` and use openai:URL");
  }
  return usage("unknown policy '" + spec + "': expected openai:URL, replay:FILE, builtin or local:CKPT");
}

void add_policy_flags(CLI::App& app, PolicyOptions& options) {
  app.add_option("--model", options.model, "openai: the model name of each request");
  app.add_option("--temperature", options.temperature, "openai, local: sampling temperature (local: 0 is greedy)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--top-p", options.top_p, "openai, local: nucleus sampling top_p")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--top-k", options.top_k, "local: most likely tokens kept; 0 keeps all")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--max-tokens", options.max_tokens,
                 "openai, local: completion tokens per turn (local: at most what the context leaves)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_flag("--logprobs", options.logprobs, "openai: ask for logprobs and token ids (local: always recorded)");
  app.add_option("--api-key-env", options.api_key_env, "openai: environment variable holding the API key")
      ->capture_default_str();
  app.add_option("--request-timeout", options.request_timeout_s, "openai: seconds of one request")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--retries", options.retries, "openai: further attempts on 429, 5xx, resets and timeouts")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--backoff", options.backoff_s, "openai: seconds before the first retry (doubling)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--device", options.device, "local: the model's device: cpu, cuda or cuda:N")->capture_default_str();
  app.add_option("--dtype", options.dtype, "local: float32 or bfloat16")
      ->capture_default_str()
      ->check(CLI::IsMember({"float32", "bfloat16"}));
  app.add_option("--builtin-variants", options.builtin_variants, "builtin: kernel variants to try")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
}

}  // namespace ca
