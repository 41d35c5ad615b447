// Makes a policy from its command-line spec: `openai:URL`, `replay:FILE`,
// `builtin`, `local:CKPT`.
#pragma once

#include <cstdint>
#include <expected>
#include <functional>
#include <memory>
#include <string>

#include "policy/policy.h"

namespace ca {

/// What ca-rollout's flags say about the policy. Fields a policy does not use are ignored by it.
struct PolicyOptions {
  std::string model;  // openai: the "model" of each request
  double temperature = 1.0;
  double top_p = 1.0;
  int64_t max_tokens = 4096;  // openai: completion tokens per turn
  bool send_seed = false;     // openai: send "seed" (the episode's seed), set when --seed is given
  bool logprobs = false;      // openai: ask for logprobs (and vLLM's token ids)
  std::string api_key_env = "OPENAI_API_KEY";
  double request_timeout_s = 600;  // openai: one request, connect to last byte
  int retries = 5;                 // openai: further attempts on 429, 5xx, resets and timeouts
  double backoff_s = 1;            // openai: first wait between attempts; doubles, at most 60 s
  int builtin_variants = 4;        // builtin: kernel variants it tries
};

/// The policy `spec` names. Errors: an unknown scheme (naming the known ones),
/// an empty URL or FILE, a replay file that cannot be read or holds no
/// trajectory, `builtin` or `local:` when this build lacks them.
std::expected<std::unique_ptr<Policy>, std::string> make_policy(const std::string& spec, const PolicyOptions& options);

/// Makes a fresh policy per episode (policies keep an episode's state).
using PolicyMaker = std::function<std::unique_ptr<Policy>()>;

/// A maker for `spec`, with make_policy's errors; the files a spec names are read once, here, not per episode.
std::expected<PolicyMaker, std::string> policy_maker(const std::string& spec, const PolicyOptions& options);

}  // namespace ca
