#include "http/http.h"

#include <memory>

#include <curl/curl.h>

namespace ca {
namespace {

size_t append(char* data, size_t size, size_t count, void* out) {
  static_cast<std::string*>(out)->append(data, size * count);
  return size * count;
}

}  // namespace

std::expected<std::string, std::string> http_post(const std::string& url, const std::string& body,
                                                  const std::vector<std::string>& headers, double timeout_s) {
  static const bool initialized = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
  if (!initialized) return std::unexpected("libcurl failed to initialize");
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), curl_easy_cleanup);
  if (!curl) return std::unexpected("libcurl failed to initialize");
  curl_slist* list = nullptr;
  for (const auto& header : headers) list = curl_slist_append(list, header.c_str());
  std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> header_list(list, curl_slist_free_all);

  std::string response;
  char message[CURL_ERROR_SIZE] = "";
  curl_easy_setopt(curl.get(), CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl.get(), CURLOPT_POSTFIELDS, body.c_str());
  curl_easy_setopt(curl.get(), CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.size()));
  curl_easy_setopt(curl.get(), CURLOPT_HTTPHEADER, list);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEFUNCTION, append);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEDATA, &response);
  curl_easy_setopt(curl.get(), CURLOPT_ERRORBUFFER, message);
  curl_easy_setopt(curl.get(), CURLOPT_TIMEOUT_MS, long(timeout_s * 1000));
  curl_easy_setopt(curl.get(), CURLOPT_NOSIGNAL, 1L);  // timeouts without SIGALRM
  CURLcode code = curl_easy_perform(curl.get());
  if (code != CURLE_OK) return std::unexpected(message[0] ? std::string(message) : std::string(curl_easy_strerror(code)));
  long status = 0;
  curl_easy_getinfo(curl.get(), CURLINFO_RESPONSE_CODE, &status);
  if (status < 200 || status >= 300) return std::unexpected("HTTP " + std::to_string(status) + ": " + response.substr(0, 200));
  return response;
}

}  // namespace ca
