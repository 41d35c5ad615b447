#include "policy/factory.h"

#include "policy/builtin/builtin_policy.h"
#include "policy/openai_policy.h"
#include "policy/replay_policy.h"

namespace ca {

std::expected<std::unique_ptr<Policy>, std::string> make_policy(const std::string& spec, const PolicyOptions& options) {
  auto colon = spec.find(':');
  std::string scheme = spec.substr(0, colon);
  std::string rest = colon == std::string::npos ? "" : spec.substr(colon + 1);
  if (scheme == "openai") {
    if (rest.empty()) return std::unexpected("openai:URL needs the API base URL, e.g. openai:http://127.0.0.1:8000/v1");
    return make_openai_policy(rest, options);
  }
  if (scheme == "replay") {
    if (rest.empty()) return std::unexpected("replay:FILE needs a trajectory JSONL file");
    auto trajectories = load_trajectories(rest);
    if (!trajectories) return std::unexpected(trajectories.error());
    return make_replay_policy(std::make_shared<const std::vector<Json>>(std::move(*trajectories)), rest);
  }
  if (scheme == "builtin") {
    BuiltinOptions builtin;
    builtin.variants = options.builtin_variants;
    return make_builtin_policy(builtin);
  }
  if (scheme == "local") {
    return std::unexpected(
        "local:CKPT: the LibTorch model policy is not in this build yet; serve the checkpoint "
        "with an OpenAI-compatible server and use openai:URL");
  }
  return std::unexpected("unknown policy '" + spec + "': expected openai:URL, replay:FILE, builtin or local:CKPT");
}

std::expected<PolicyMaker, std::string> policy_maker(const std::string& spec, const PolicyOptions& options) {
  if (spec.starts_with("replay:")) {
    std::string path = spec.substr(7);
    auto trajectories =
        path.empty() ? std::unexpected("replay:FILE needs a trajectory JSONL file") : load_trajectories(path);
    if (!trajectories) return std::unexpected(trajectories.error());
    auto shared = std::make_shared<const std::vector<Json>>(std::move(*trajectories));
    return [shared, path] { return make_replay_policy(shared, path); };
  }
  auto first = make_policy(spec, options);
  if (!first) return std::unexpected(first.error());
  return [spec, options] { return std::move(*make_policy(spec, options)); };
}

}  // namespace ca
