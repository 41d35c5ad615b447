// LLM mode of ca-synth: ask an OpenAI-compatible chat endpoint for a
// KernelBench-style model.py built from 2-5 sampled op/module records, and
// import the answer through the KernelBench importer
// (bridge/import_kernelbench.py: torch.export, weights to safetensors) into a
// task record. Every failure is a counted reason, never fatal.
#pragma once

#include <expected>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "synth/grammar.h"
#include "util/jsonl.h"

namespace ca {

/// POSTs a body with headers to a URL and returns the response body.
using HttpPost = std::function<std::expected<std::string, std::string>(const std::string& url, const std::string& body,
                                                                       const std::vector<std::string>& headers)>;

struct LlmOptions {
  std::string url;  // the API base, e.g. http://localhost:8000/v1; /chat/completions is appended
  std::string model;
  std::string api_key;  // "" sends no Authorization header
  double temperature = 0.7;
  double target_ms = 2;
  std::string device = "h200";
  std::string params_dir = "llm-params";  // where the importer writes each task's weights
  double import_timeout_s = 300;
  uint64_t seed = 0;
};

/// The user prompt for `picked` op and module records.
std::string llm_prompt(const std::vector<Json>& picked, double target_ms, const std::string& device);

/// The chat-completions request body (model, messages, temperature, seed).
Json chat_request(const LlmOptions& options, const std::string& prompt, uint64_t seed);

/// The first ```python (or plain ```) block of choices[0].message.content.
/// Errors: "not a chat completion: ..." or "no code block in the reply".
std::expected<std::string, std::string> code_from_reply(const std::string& body);

/// Writes `code` to a scratch <id>.py and runs the KernelBench importer on it
/// (import_bridge_command finds Python and the script; model weights drawn
/// with `seed` go to <params_dir>/kernelbench-<id>.safetensors);
/// returns {kind:"task", id, source:"llm", program, seed, derived_inputs?},
/// or the importer's import_error message or last stderr line.
std::expected<Json, std::string> import_model_py(const std::string& code, const std::string& id, uint64_t seed,
                                                 const LlmOptions& options);

class LlmComposer {
 public:
  /// `records`: op records (only usable ones are sampled) and module records.
  LlmComposer(std::vector<Json> records, LlmOptions options, HttpPost post);

  /// One request: a checked task record, or the reason it failed ("http",
  /// "no code block", "import", "check", "duplicate"), which is also counted.
  std::expected<Json, std::string> next();

  size_t requests() const { return m_requests; }
  /// One line for stderr: requests, tasks, failures by reason.
  std::string summary() const;

 private:
  struct Failure {
    std::string reason;  // counted
    std::string detail;  // logged with -v
  };
  std::expected<Json, Failure> attempt();
  std::vector<Json> m_pool;
  LlmOptions m_options;
  HttpPost m_post;
  Rng m_rng;
  size_t m_requests = 0;
  size_t m_tasks = 0;
  std::map<std::string, size_t> m_failures;
  std::set<std::string> m_fingerprints;
};

}  // namespace ca
