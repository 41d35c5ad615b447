#include "http/http.h"

#include <strings.h>
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <thread>

#include <curl/curl.h>

#include "util/signals.h"

namespace ca {
namespace {

size_t append(char* data, size_t size, size_t count, void* out) {
  static_cast<std::string*>(out)->append(data, size * count);
  return size * count;
}

size_t read_retry_after(char* data, size_t size, size_t count, void* out) {
  static const char name[] = "retry-after:";
  size_t length = size * count;
  if (length > sizeof name - 1 && strncasecmp(data, name, sizeof name - 1) == 0) {
    std::string value(data + sizeof name - 1, length - (sizeof name - 1));
    char* end = nullptr;
    double seconds = std::strtod(value.c_str(), &end);
    if (end != value.c_str() && seconds >= 0) *static_cast<double*>(out) = seconds;
  }
  return length;
}

// Non-zero aborts the transfer: a SIGINT must not wait for a long generation.
int abort_on_interrupt(void*, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  return interrupted() ? 1 : 0;
}

// Sleeps `seconds` in short steps; false when an interrupt came first.
bool sleep_unless_interrupted(double seconds) {
  auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < until) {
    if (interrupted()) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return !interrupted();
}

std::string describe(const HttpAttempt& attempt) {
  if (attempt.status == 0) return attempt.error;
  return "HTTP " + std::to_string(attempt.status) + ": " + attempt.body.substr(0, 200);
}

}  // namespace

HttpAttempt curl_post(const std::string& url, const std::string& body, const std::vector<std::string>& headers,
                      const HttpOptions& options) {
  HttpAttempt attempt;
  static const bool initialized = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(initialized ? curl_easy_init() : nullptr, curl_easy_cleanup);
  if (!curl) {
    attempt.error = "libcurl failed to initialize";
    return attempt;
  }
  curl_slist* list = nullptr;
  for (const auto& header : headers) list = curl_slist_append(list, header.c_str());
  std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> header_list(list, curl_slist_free_all);
  char message[CURL_ERROR_SIZE] = "";
  CURL* handle = curl.get();
  curl_easy_setopt(handle, CURLOPT_URL, url.c_str());
  curl_easy_setopt(handle, CURLOPT_POSTFIELDS, body.c_str());
  curl_easy_setopt(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.size()));
  curl_easy_setopt(handle, CURLOPT_HTTPHEADER, list);
  curl_easy_setopt(handle, CURLOPT_WRITEFUNCTION, append);
  curl_easy_setopt(handle, CURLOPT_WRITEDATA, &attempt.body);
  curl_easy_setopt(handle, CURLOPT_HEADERFUNCTION, read_retry_after);
  curl_easy_setopt(handle, CURLOPT_HEADERDATA, &attempt.retry_after_s);
  curl_easy_setopt(handle, CURLOPT_ERRORBUFFER, message);
  curl_easy_setopt(handle, CURLOPT_TIMEOUT_MS, long(options.timeout_s * 1000));
  curl_easy_setopt(handle, CURLOPT_CONNECTTIMEOUT_MS,
                   long(std::min(options.connect_timeout_s, options.timeout_s) * 1000));
  curl_easy_setopt(handle, CURLOPT_NOSIGNAL, 1L);  // timeouts without SIGALRM
  curl_easy_setopt(handle, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(handle, CURLOPT_XFERINFOFUNCTION, abort_on_interrupt);
  CURLcode code = curl_easy_perform(handle);
  if (code != CURLE_OK) {
    attempt.status = 0;
    attempt.timed_out = code == CURLE_OPERATION_TIMEDOUT;
    attempt.error = code == CURLE_ABORTED_BY_CALLBACK ? "interrupted"
                    : message[0]                      ? std::string(message)
                                                      : std::string(curl_easy_strerror(code));
    return attempt;
  }
  curl_easy_getinfo(handle, CURLINFO_RESPONSE_CODE, &attempt.status);
  return attempt;
}

bool retryable(const HttpAttempt& attempt) {
  if (attempt.status == 408 || attempt.status == 429 || attempt.status >= 500) return true;
  if (attempt.status != 0) return false;
  return attempt.error != "interrupted" && attempt.error != "libcurl failed to initialize";
}

std::expected<std::string, std::string> http_post(const std::string& url, const std::string& body,
                                                  const std::vector<std::string>& headers, const HttpOptions& options,
                                                  const HttpTransport& transport) {
  double wait = options.backoff_s;
  for (int attempts = 1;; ++attempts) {
    HttpAttempt attempt = transport(url, body, headers, options);
    if (attempt.status >= 200 && attempt.status < 300) return std::move(attempt.body);
    if (attempt.error == "interrupted") return std::unexpected("interrupted");
    auto failure = [&] {
      return describe(attempt) + " (after " + std::to_string(attempts) + (attempts == 1 ? " attempt)" : " attempts)");
    };
    if (!retryable(attempt) || attempts > options.retries) return std::unexpected(failure());
    double pause = std::min(attempt.retry_after_s >= 0 ? attempt.retry_after_s : wait, options.backoff_max_s);
    if (!sleep_unless_interrupted(pause)) return std::unexpected("interrupted");
    wait = std::min(wait * 2, options.backoff_max_s);
  }
}

std::expected<std::string, std::string> http_post(const std::string& url, const std::string& body,
                                                  const std::vector<std::string>& headers, double timeout_s) {
  HttpOptions options;
  options.timeout_s = timeout_s;
  return http_post(url, body, headers, options);
}

}  // namespace ca
