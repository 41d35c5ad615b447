// LLM mode of ca-synth: ask an OpenAI-compatible chat endpoint for a
// KernelBench-style model.py built from 2-5 sampled op/module records, and
// import the answer through the Python bridge (torch.export) into a task
// record. Every failure is a counted reason, never fatal.
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
  std::string url;      // the API base, e.g. http://localhost:8000/v1; /chat/completions is appended
  std::string model;
  std::string api_key;  // "" sends no Authorization header
  double temperature = 0.7;
  double target_ms = 2;
  std::string device = "h200";
  std::string python;  // the interpreter that runs the bridge (with torch)
  std::string bridge;  // bridge/import_model.py
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

/// Writes `code` to a scratch model.py and runs the bridge on it; returns its
/// task record {kind:"task", id, source:"llm", program, seed} or the bridge's
/// last stderr line.
std::expected<Json, std::string> import_model_py(const std::string& code, const std::string& id, const LlmOptions& options);

/// The Python that runs the bridge: $CA_PYTHON, else .venv/bin/python two
/// levels above the running executable (build/bin in a checkout), else in
/// `source_dir`, else "python3".
std::string default_python(const std::string& source_dir);
/// bridge/import_model.py: under $CA_BRIDGE_DIR, else two levels above the
/// running executable, else in `source_dir`; "" when none exists.
std::string default_bridge(const std::string& source_dir);

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
