// HTTP POST through libcurl, for OpenAI-compatible endpoints. Built only into
// the tools that talk to one (ca-synth), so the rest needs no libcurl.
#pragma once

#include <expected>
#include <string>
#include <vector>

namespace ca {

/// POSTs `body` to `url` with `headers` ("Name: value") and returns the
/// response body for a 2xx status. Errors: "HTTP 404: <start of body>", or
/// curl's message ("Couldn't connect to server") for transport failures and
/// timeouts (`timeout_s` for the whole request).
std::expected<std::string, std::string> http_post(const std::string& url, const std::string& body,
                                                  const std::vector<std::string>& headers, double timeout_s);

}  // namespace ca
