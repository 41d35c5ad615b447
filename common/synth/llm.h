// LLM mode of ca-synth: ask an OpenAI-compatible chat endpoint for a
// KernelBench-style model.py built from 2-5 sampled op/module records, and
// import the answer through the KernelBench importer
// (bridge/import_kernelbench.py: torch.export, weights to safetensors) into a
// task record. The model's code runs only in the sandbox (sandbox/sandbox.h: no network, the project read-only, time
// and memory limits). Every failure is a counted reason, never fatal.
#pragma once

#include <expected>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "sandbox/sandbox.h"
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
  // The importer's sandbox: wall and CPU seconds, address space (torch reserves much), processes (torch's threads).
  SandboxLimits import_limits{.wall_s = 300, .cpu_s = 300, .memory_bytes = int64_t{16} << 30, .processes = 256};
  uint64_t seed = 0;
};

/// The user prompt for `picked` op and module records.
std::string llm_prompt(const std::vector<Json>& picked, double target_ms, const std::string& device);

/// The chat-completions request body (model, messages, temperature, seed).
Json chat_request(const LlmOptions& options, const std::string& prompt, uint64_t seed);

/// The first ```python (or plain ```) block of choices[0].message.content.
/// Errors: "not a chat completion: ..." or "no code block in the reply".
std::expected<std::string, std::string> code_from_reply(const std::string& body);

/// Why import_model_py made no task: `reason` is counted ("import", or "timeout" when the importer ran past
/// import_limits' wall or CPU time), `detail` says what happened.
struct LlmImportError {
  std::string reason;
  std::string detail;
};

/// Writes `code` to <id>.py in a scratch folder made inside options.params_dir and runs the KernelBench importer on
/// it in the sandbox (run_sandboxed with options.import_limits; import_bridge_command finds Python and the script):
/// nothing but the scratch folder is writable, there is no network, and a model that never finishes is killed at
/// the wall limit. Weights drawn with `seed` move to <params_dir>/kernelbench-<id>.safetensors; the scratch folder
/// and everything the code left in it are removed. Returns {kind:"task", id, source:"llm", program, seed,
/// derived_inputs?}, or the importer's import_error message, its last stderr line, or the limit it ran past.
std::expected<Json, LlmImportError> import_model_py(const std::string& code, const std::string& id, uint64_t seed,
                                                    const LlmOptions& options);

class LlmComposer {
 public:
  /// `records`: op records (only usable ones are sampled) and module records.
  LlmComposer(std::vector<Json> records, LlmOptions options, HttpPost post);

  /// One request: a checked task record, or the reason it failed ("http",
  /// "no code block", "import", "timeout", "check", "duplicate"), which is also counted.
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
