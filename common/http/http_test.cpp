#include "http/http.h"

#include <gtest/gtest.h>

namespace ca {
namespace {

// A transport that answers from a list and counts its calls.
struct Scripted {
  std::vector<HttpAttempt> answers;
  size_t calls = 0;
  HttpTransport transport() {
    return [this](const std::string&, const std::string&, const std::vector<std::string>&, const HttpOptions&) {
      return answers[std::min(calls++, answers.size() - 1)];
    };
  }
};

HttpAttempt status(long code, std::string body = "") {
  HttpAttempt attempt;
  attempt.status = code;
  attempt.body = std::move(body);
  return attempt;
}

HttpAttempt transport_error(std::string message, bool timed_out = false) {
  HttpAttempt attempt;
  attempt.error = std::move(message);
  attempt.timed_out = timed_out;
  return attempt;
}

HttpOptions fast(int retries) {
  HttpOptions options;
  options.retries = retries;
  options.backoff_s = 0.001;
  return options;
}

TEST(HttpPostTest, RetriesRateLimitsServerErrorsAndTimeoutsThenSucceeds) {
  Scripted server{{status(429), status(503), transport_error("Timeout was reached", true),
                   transport_error("Connection reset by peer"), status(200, "ok")}};
  auto body = http_post("http://x", "{}", {}, fast(4), server.transport());
  ASSERT_TRUE(body) << body.error();
  EXPECT_EQ(*body, "ok");
  EXPECT_EQ(server.calls, 5u);
}

TEST(HttpPostTest, GivesUpAfterItsRetriesNamingTheLastFailure) {
  Scripted server{{status(500, "internal")}};
  auto body = http_post("http://x", "{}", {}, fast(2), server.transport());
  ASSERT_FALSE(body);
  EXPECT_EQ(body.error(), "HTTP 500: internal (after 3 attempts)");
  EXPECT_EQ(server.calls, 3u);
}

TEST(HttpPostTest, DoesNotRetryWhatARetryCannotFix) {
  Scripted server{{status(400, "bad request")}};
  auto body = http_post("http://x", "{}", {}, fast(5), server.transport());
  EXPECT_EQ(body.error(), "HTTP 400: bad request (after 1 attempt)");
  EXPECT_EQ(server.calls, 1u);
  EXPECT_FALSE(retryable(status(401)));
  EXPECT_FALSE(retryable(transport_error("interrupted")));
  EXPECT_TRUE(retryable(status(408)));
}

TEST(HttpPostTest, HonoursRetryAfterUpToTheCap) {
  HttpAttempt limited = status(429);
  limited.retry_after_s = 1000;  // capped by backoff_max_s
  Scripted server{{limited, status(200, "ok")}};
  HttpOptions options = fast(1);
  options.backoff_max_s = 0.01;
  EXPECT_EQ(http_post("http://x", "{}", {}, options, server.transport()).value(), "ok");
}

TEST(CurlPostTest, ReportsARefusedConnection) {
  HttpOptions options;
  options.timeout_s = 5;
  HttpAttempt attempt = curl_post("http://127.0.0.1:9/v1/chat/completions", "{}", {}, options);
  EXPECT_EQ(attempt.status, 0);
  EXPECT_NE(attempt.error.find("connect"), std::string::npos) << attempt.error;
  EXPECT_TRUE(retryable(attempt));
}

}  // namespace
}  // namespace ca
