// The one HTTP client (libcurl) for OpenAI-compatible endpoints: POSTs with a
// per-request timeout and retries with backoff on what a retry can fix (429,
// 5xx, resets, timeouts). Used by ca-rollout's openai policy and ca-synth --llm.
#pragma once

#include <expected>
#include <functional>
#include <string>
#include <vector>

namespace ca {

struct HttpOptions {
  double timeout_s = 600;         // one attempt, connect to last byte
  double connect_timeout_s = 30;  // connecting alone
  int retries = 5;                // further attempts after a retryable failure
  double backoff_s = 1;           // wait before the first retry; doubles each time
  double backoff_max_s = 60;      // a wait never exceeds this (nor a server's Retry-After beyond it)
};

/// How one attempt ended.
struct HttpAttempt {
  long status = 0;  // the HTTP status; 0 when no response came (transport failure)
  std::string body;
  std::string error;  // curl's message for a transport failure, else ""
  bool timed_out = false;
  double retry_after_s = -1;  // the server's Retry-After in seconds, -1 when absent
};

/// One POST attempt: sends `body` to `url` with `headers` ("Name: value").
/// Stops early with error "interrupted" on SIGINT/SIGTERM (util/signals.h).
using HttpTransport = std::function<HttpAttempt(const std::string& url, const std::string& body,
                                                const std::vector<std::string>& headers, const HttpOptions& options)>;

/// The libcurl transport.
HttpAttempt curl_post(const std::string& url, const std::string& body, const std::vector<std::string>& headers,
                      const HttpOptions& options);

/// Whether a retry may fix what `attempt` met: 408, 429, 5xx, a timeout, a
/// reset or refused connection. An interrupt never is.
bool retryable(const HttpAttempt& attempt);

/// POSTs through `transport` (curl_post by default) and returns the body of
/// the first 2xx response, retrying retryable failures up to options.retries
/// times with exponential backoff (interruptible). Errors say what the last
/// attempt met and how many were made: "HTTP 500: <start of body> (after 6
/// attempts)", "Timeout was reached (after 1 attempt)", "interrupted".
std::expected<std::string, std::string> http_post(const std::string& url, const std::string& body,
                                                  const std::vector<std::string>& headers, const HttpOptions& options,
                                                  const HttpTransport& transport = curl_post);

/// http_post with `timeout_s` per attempt and the default retries.
std::expected<std::string, std::string> http_post(const std::string& url, const std::string& body,
                                                  const std::vector<std::string>& headers, double timeout_s);

}  // namespace ca
