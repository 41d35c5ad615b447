#include "synth/llm.h"

#include <gtest/gtest.h>

namespace ca {
namespace {

std::string reply_with(const std::string& content) {
  return Json{{"choices", Json::array({{{"message", {{"role", "assistant"}, {"content", content}}}}})}}.dump();
}

TEST(CodeFromReplyTest, TakesThePythonBlock) {
  auto code = code_from_reply(reply_with("Sure:\n```python\nimport torch\nx = 1\n```\nDone."));
  ASSERT_TRUE(code) << code.error();
  EXPECT_EQ(*code, "import torch\nx = 1\n");
  EXPECT_EQ(*code_from_reply(reply_with("```\ny = 2\n```")), "y = 2\n");
}

TEST(CodeFromReplyTest, SaysWhatIsMissing) {
  EXPECT_EQ(code_from_reply(reply_with("no code here")).error(), "no code block in the reply");
  EXPECT_EQ(code_from_reply(reply_with("```python\nopen")).error(), "no code block in the reply (unclosed fence)");
  EXPECT_EQ(code_from_reply("{\"error\":\"busy\"}").error(), "not a chat completion: no choices[0].message.content");
  EXPECT_EQ(code_from_reply("{\"choices\":[1]}").error(), "not a chat completion: no choices[0].message.content");
  EXPECT_EQ(code_from_reply("not json").error(), "not a chat completion: no choices[0].message.content");
}

TEST(LlmPromptTest, NamesEveryRecordAndTheTarget) {
  std::vector<Json> picked = {
      {{"kind", "op"},
       {"name", "aten::gelu"},
       {"schema", "aten::gelu(Tensor self, *, str approximate=\"none\") -> Tensor"}},
      {{"kind", "module"}, {"name", "LayerNorm"}, {"init_signature", "(normalized_shape, eps=1e-05)"}}};
  std::string prompt = llm_prompt(picked, 5, "h200");
  EXPECT_NE(prompt.find("aten::gelu(Tensor self"), std::string::npos);
  EXPECT_NE(prompt.find("module LayerNorm(normalized_shape, eps=1e-05)"), std::string::npos);
  EXPECT_NE(prompt.find("about 5 ms in float32 on an NVIDIA H200"), std::string::npos);
}

TEST(LlmComposerTest, CountsFailuresByReason) {
  std::vector<Json> records = {
      {{"kind", "op"}, {"name", "aten::relu"}, {"usable", true}, {"schema", "aten::relu(Tensor self) -> Tensor"}}};
  LlmOptions options;
  options.url = "http://127.0.0.1:9/v1";
  options.model = "m";
  options.params_dir = ::testing::TempDir() + "ca_synth_llm_params";
  std::vector<std::string> urls;
  int call = 0;
  HttpPost post = [&](const std::string& url, const std::string& body,
                      const std::vector<std::string>&) -> std::expected<std::string, std::string> {
    urls.push_back(url);
    EXPECT_EQ(Json::parse(body)["model"], "m");
    switch (call++) {
      case 0:
        return std::unexpected("Couldn't connect to server");
      case 1:
        return reply_with("nothing");
      default:
        return reply_with("```python\nclass Model: pass\n```");
    }
  };
  LlmComposer composer(records, options, post);
  EXPECT_EQ(composer.next().error(), "http: Couldn't connect to server");
  EXPECT_EQ(composer.next().error(), "no code block: no code block in the reply");
  // The real importer (bridge/import_kernelbench.py) refuses a file without get_inputs.
  std::string imported = composer.next().error();
  EXPECT_TRUE(imported.starts_with("import: ")) << imported;
  EXPECT_EQ(urls[0], "http://127.0.0.1:9/v1/chat/completions");
  EXPECT_EQ(composer.summary(), "0 tasks from 3 requests; failed: http 1, import 1, no code block 1");
}

}  // namespace
}  // namespace ca
