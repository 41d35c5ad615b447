// LLM mode of ca-synth: ask an OpenAI-compatible chat endpoint for a
// KernelBench-style model.py built from 2-5 sampled op/module records, and
// import the answer through the KernelBench importer
// (bridge/import_kernelbench.py: torch.export, weights to safetensors) into a
// task record. The model's code runs only in the sandbox (sandbox/sandbox.h: no network, the project read-only, time
// and memory limits). Every failure is a counted reason, never fatal: http, no code, the importer's stage (syntax,
// load, shape, forward, export, unsupported), import (the importer itself failed), timeout, check, duplicate.
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
  int64_t max_tokens = 0;  // the request's max_tokens; 0 sends none (the server's default)
  double target_ms = 2;
  std::string device = "h200";
  std::string params_dir = "llm-params";  // where the importer writes each task's weights
  // The importer's sandbox: wall and CPU seconds, address space (torch reserves much), processes (torch's threads).
  SandboxLimits import_limits{.wall_s = 300, .cpu_s = 300, .memory_bytes = int64_t{16} << 30, .processes = 256};
  uint64_t seed = 0;
};

/// The user prompt for `picked` op and module records: an op by its schema, a module by where to import it from,
/// its constructor, the config fields it reads (transformers' blocks take a config) and its forward's signature.
std::string llm_prompt(const std::vector<Json>& picked, double target_ms, const std::string& device);

/// The chat-completions request body (model, messages, temperature, seed, max_tokens when set).
Json chat_request(const LlmOptions& options, const std::string& prompt, uint64_t seed);

/// The first ```python (or plain ```) block of choices[0].message.content.
/// Errors: "not a chat completion: ..." or "no code block in the reply".
std::expected<std::string, std::string> code_from_reply(const std::string& body);

/// Why import_model_py made no task: `reason` is counted (the importer's stage: "syntax", "load", "shape",
/// "forward", "export", "unsupported"; "timeout" when it ran past import_limits' wall or CPU time; "import" when the
/// importer itself failed), `detail` says what happened.
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

/// One request of an LlmComposer: its number (from 0), the task id it would make, its seed and the request body.
struct LlmRequest {
  size_t index = 0;
  std::string id;
  uint64_t seed = 0;
  std::string body;
};

/// Why a request made no task: `reason` is counted, `detail` is logged with -v.
struct LlmFailure {
  std::string reason;
  std::string detail;
};

class LlmComposer {
 public:
  /// `records`: op records (only usable ones are sampled) and module records. A prompt's 2-5 records are each drawn
  /// from the ops or, with even odds when there are both, from the modules.
  LlmComposer(std::vector<Json> records, LlmOptions options, HttpPost post);

  /// One request start to end: a checked task record, or "reason: detail" (the reason is also counted).
  std::expected<Json, std::string> next() {
    LlmRequest request = prepare();
    auto task = finish(request, ask(request));
    if (!task) return std::unexpected(task.error().reason + ": " + task.error().detail);
    return std::move(*task);
  }

  /// next() in three steps, for requests in flight together: prepare and finish change the composer (callers
  /// serialise them); ask sends the request and imports the answer and may run for several requests at once.
  /// Request i draws its records and seed from Rng::for_item(seed, i); prepare hands out the lowest index neither
  /// prepared nor replayed.
  LlmRequest prepare();
  std::expected<Json, LlmFailure> ask(const LlmRequest& request) const;
  /// Checks an imported task, drops a duplicate, and counts the outcome.
  std::expected<Json, LlmFailure> finish(const LlmRequest& request, std::expected<Json, LlmFailure> answer);

  /// Takes the outcome of request `index` that a run cut short journaled (a task finish() returned, or the failure
  /// it counted) as if it had just finished here: prepare skips it, and it counts as now.
  void replay(size_t index, const std::expected<Json, LlmFailure>& outcome);

  size_t requests() const { return m_requests; }
  size_t tasks() const { return m_tasks; }
  /// Requests the endpoint answered (all but the "http" failures).
  size_t answers() const;
  const std::map<std::string, size_t>& failures() const { return m_failures; }
  /// One line for stderr: "T tasks from R requests (A answers); failed: reason n, ...".
  std::string summary() const;

 private:
  std::vector<Json> m_ops;
  std::vector<Json> m_modules;
  LlmOptions m_options;
  HttpPost m_post;
  size_t m_requests = 0;
  size_t m_next_index = 0;
  std::set<size_t> m_replayed;
  size_t m_tasks = 0;
  std::map<std::string, size_t> m_failures;
  std::set<std::string> m_fingerprints;
};

}  // namespace ca
