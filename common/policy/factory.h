// Makes a policy from its command-line spec: `openai:URL`, `replay:FILE`,
// `builtin`, `local:CKPT`.
#pragma once

#include <cstdint>
#include <expected>
#include <functional>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "policy/policy.h"
#include "util/exit_codes.h"

namespace ca {

/// What ca-rollout's flags say about the policy. Fields a policy does not use are ignored by it.
struct PolicyOptions {
  std::string model;              // openai: the "model" of each request
  double temperature = 1.0;       // openai, local
  double top_p = 1.0;             // openai, local
  int64_t top_k = 0;              // local: most likely tokens kept, 0 keeps all
  int64_t max_tokens = 4096;      // openai, local: completion tokens per turn (local: at most what the context leaves)
  std::string device = "cpu";     // local: cpu, cuda, cuda:N
  std::string dtype = "float32";  // local: float32 or bfloat16
  bool send_seed = false;         // openai: send "seed" (the episode's seed), set when --seed is given
  bool logprobs = false;          // openai: ask for logprobs (and vLLM's token ids)
  std::string api_key_env = "OPENAI_API_KEY";
  double request_timeout_s = 600;  // openai: one request, connect to last byte
  int retries = 5;                 // openai: further attempts on 429, 5xx, resets and timeouts
  double backoff_s = 1;            // openai: first wait between attempts; doubles, at most 60 s
  int builtin_variants = 4;        // builtin: kernel variants it tries
};

/// The policy `spec` names. Errors: an unknown scheme (naming the known ones), an empty URL or FILE, a replay file
/// that cannot be read or holds no trajectory, `local:` in a program that did not register it
/// (register_policy_scheme), and the errors of a registered scheme's maker (a checkpoint that does not load).
std::expected<std::unique_ptr<Policy>, std::string> make_policy(const std::string& spec, const PolicyOptions& options);

/// Makes a fresh policy per episode (policies keep an episode's state).
using PolicyMaker = std::function<std::unique_ptr<Policy>()>;

/// Why a spec gives no policy, with the exit code a tool reports it by: usage (a bad spec), no_input (a file or
/// checkpoint it names is missing), data_error (one that does not read: a bad config.json, a replay file without
/// trajectories).
struct PolicySpecError {
  std::string message;
  ExitCode code = ExitCode::usage;
};

/// A maker for `spec`, with make_policy's errors; the files a spec names are read once, here, not per episode.
std::expected<PolicyMaker, PolicySpecError> policy_maker(const std::string& spec, const PolicyOptions& options);

/// The maker of a scheme that lives outside ca_agent: given what follows "scheme:" and the options, a maker (its
/// files loaded once) or why not.
using SchemeMaker =
    std::function<std::expected<PolicyMaker, PolicySpecError>(const std::string&, const PolicyOptions&)>;

/// Teaches make_policy and policy_maker `scheme` (e.g. "local", provided by ca_model over LibTorch, which ca_agent
/// must not link). A tool that links the provider registers it before making policies; registering a scheme again
/// replaces its maker. Thread-safe.
void register_policy_scheme(const std::string& scheme, SchemeMaker maker);

/// The policy flags of ca-rollout, declared once with one help text each: --model, --temperature, --top-p, --top-k,
/// --max-tokens, --logprobs, --api-key-env, --request-timeout, --retries, --backoff, --device, --dtype,
/// --builtin-variants. Each help text names the policies it applies to.
void add_policy_flags(CLI::App& app, PolicyOptions& options);

}  // namespace ca
