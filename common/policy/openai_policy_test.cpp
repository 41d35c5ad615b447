#include "policy/openai_policy.h"

#include <cstdlib>

#include <gtest/gtest.h>

#include "policy/factory.h"

namespace ca {
namespace {

TEST(ChatCompletionRequestTest, CarriesSamplingAndSeedOnlyWhenAsked) {
  PolicyOptions options;
  options.model = "m";
  options.temperature = 0.25;
  options.max_tokens = 100;
  Json messages = Json::array({{{"role", "user"}, {"content", "hi"}}});
  Json request = chat_completion_request(messages, Json::array(), options, 0x1234567890ULL);
  EXPECT_EQ(request["model"], "m");
  EXPECT_EQ(request["temperature"], 0.25);
  EXPECT_EQ(request["max_tokens"], 100);
  EXPECT_EQ(request["tool_choice"], "auto");
  EXPECT_FALSE(request.contains("seed"));
  EXPECT_FALSE(request.contains("logprobs"));
  options.send_seed = true;
  options.logprobs = true;
  request = chat_completion_request(messages, Json::array(), options, 0x1234567890ULL);
  EXPECT_EQ(request["seed"], 0x34567890);
  EXPECT_EQ(request["logprobs"], true);
}

TEST(ParseChatCompletionTest, ReadsStructuredCallsUsageAndLogprobs) {
  auto turn = parse_chat_completion(R"({"id": "r1", "choices": [{"message": {"content": null, "tool_calls": [
      {"id": "a", "type": "function", "function": {"name": "bash", "arguments": "{\"command\": \"ls\"}"}},
      {"id": "b", "type": "function", "function": {"name": "verify", "arguments": {}}}]},
      "finish_reason": "tool_calls", "logprobs": {"content": [{"token": "token_id:7", "logprob": -1.5}]}}],
      "usage": {"prompt_tokens": 10, "completion_tokens": 2}})");
  ASSERT_TRUE(turn) << turn.error();
  ASSERT_EQ(turn->tool_calls.size(), 2u);
  EXPECT_EQ(turn->tool_calls[0].id, "a");
  EXPECT_EQ(turn->tool_calls[1].arguments, "{}");
  EXPECT_EQ(turn->finish_reason, "tool_calls");
  EXPECT_EQ(turn->prompt_tokens, 10);
  EXPECT_EQ(turn->completion_tokens, 2);
  EXPECT_EQ(turn->token_ids, std::vector<int64_t>{7});
  EXPECT_EQ(turn->logprobs, std::vector<double>{-1.5});
  EXPECT_EQ(turn->extra["response_id"], "r1");
  EXPECT_FALSE(turn->extra.contains("tool_calls_from_text"));
}

TEST(ParseChatCompletionTest, FallsBackToCallsInTheText) {
  auto turn = parse_chat_completion(
      R"({"choices": [{"message": {"content": "```json\n{\"name\": \"finish\", \"arguments\": {}}\n```"}}]})");
  ASSERT_TRUE(turn) << turn.error();
  ASSERT_EQ(turn->tool_calls.size(), 1u);
  EXPECT_EQ(turn->tool_calls[0].name, "finish");
  EXPECT_EQ(turn->extra["tool_calls_from_text"], true);
  EXPECT_EQ(turn->prompt_tokens, -1);
}

TEST(ParseChatCompletionTest, SaysWhatIsWrongWithABadBody) {
  EXPECT_TRUE(parse_chat_completion("{\"choices\": [").error().starts_with("reply is not JSON: "));
  EXPECT_EQ(parse_chat_completion("{\"choices\": []}").error(), "not a chat completion: no choices[0].message");
  EXPECT_EQ(parse_chat_completion("[1]").error(), "not a chat completion: no choices[0].message");
  EXPECT_EQ(parse_chat_completion(R"({"error": {"message": "model not found"}})").error(),
            "server error: model not found");
  // Wrong types in every field are no crash.
  auto odd = parse_chat_completion(
      R"({"choices": [{"message": {"content": 5, "tool_calls": [3, {"function": 1}]}, "finish_reason": 2,
      "logprobs": {"content": [{"logprob": "x"}]}}], "usage": {"prompt_tokens": "many"}})");
  ASSERT_TRUE(odd);
  EXPECT_TRUE(odd->tool_calls.empty());
  EXPECT_EQ(odd->prompt_tokens, -1);
}

TEST(OpenAiPolicyTest, PostsToChatCompletionsWithTheKeyAndReportsHttpFailures) {
  setenv("CA_TEST_OPENAI_KEY", "k1", 1);
  PolicyOptions options;
  options.api_key_env = "CA_TEST_OPENAI_KEY";
  options.retries = 1;
  options.backoff_s = 0;
  std::vector<std::string> urls, auth;
  int calls = 0;
  HttpTransport transport = [&](const std::string& url, const std::string&, const std::vector<std::string>& headers,
                                const HttpOptions&) {
    urls.push_back(url);
    for (const auto& header : headers) {
      if (header.starts_with("Authorization:")) auth.push_back(header);
    }
    HttpAttempt attempt;
    attempt.status = calls++ == 0 ? 200 : 500;
    attempt.body = attempt.status == 200 ? R"({"choices": [{"message": {"content": "hello"}}]})" : "boom";
    return attempt;
  };
  auto policy = make_openai_policy("http://h:1/v1/", options, transport);
  policy->begin({});
  auto turn = policy->next(Json::array(), Json::array());
  ASSERT_TRUE(turn);
  EXPECT_EQ(turn->content, "hello");
  EXPECT_EQ(urls[0], "http://h:1/v1/chat/completions");
  EXPECT_EQ(auth[0], "Authorization: Bearer k1");
  auto failed = policy->next(Json::array(), Json::array());
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().message, "http://h:1/v1/chat/completions: HTTP 500: boom (after 2 attempts)");
  EXPECT_EQ(policy->describe()["name"], "openai");
}

TEST(MakePolicyTest, NamesWhatIsWrongWithASpec) {
  PolicyOptions options;
  EXPECT_TRUE(make_policy("gpt", options).error().starts_with("unknown policy 'gpt'"));
  EXPECT_TRUE(make_policy("openai:", options).error().starts_with("openai:URL needs"));
  EXPECT_TRUE(make_policy("replay:/no/such/file", options).error().find("/no/such/file") != std::string::npos);
  EXPECT_TRUE(make_policy("local:ckpt", options).error().find("built without the LibTorch model") != std::string::npos);
  EXPECT_TRUE(make_policy("openai:http://127.0.0.1:9/v1", options).has_value());
}

}  // namespace
}  // namespace ca
