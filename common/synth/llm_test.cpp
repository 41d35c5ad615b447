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
  EXPECT_EQ(prompt.find("config"), std::string::npos) << "no module here takes a config";
}

TEST(LlmPromptTest, SaysWhereAModuleLivesAndWhatItsConfigHolds) {
  std::vector<Json> picked = {
      {{"kind", "module"},
       {"name", "LlamaMLP"},
       {"origin", "transformers"},
       {"file", "llama/modeling_llama.py"},
       {"init_signature", "(self, config)"},
       {"config_fields", {"hidden_act", "hidden_size"}},
       {"forward_source", "def forward(self, x):\n    return x\n"}},
      {{"kind", "module"},
       {"name", "Threshold"},
       {"origin", "torch.nn"},
       {"init_signature", "(self, threshold: float, value: float)"},
       {"forward_source", "def forward(\n    self,\n    input: Tensor,\n) -> Tensor:\n    return input\n"}}};
  std::string prompt = llm_prompt(picked, 2, "cpu");
  EXPECT_NE(prompt.find("- module transformers.models.llama.modeling_llama.LlamaMLP(config), reading config fields "
                        "hidden_act hidden_size; forward(x)\n"),
            std::string::npos)
      << prompt;
  EXPECT_NE(prompt.find("- module nn.Threshold(threshold: float, value: float); forward(input: Tensor)\n"),
            std::string::npos)
      << prompt;
  EXPECT_NE(prompt.find("Config class"), std::string::npos);
  EXPECT_NE(prompt.find("about 2 ms in float32 on cpu"), std::string::npos);
}

TEST(LlmComposerTest, DrawsOpsAndModulesAtEvenOddsAndSendsMaxTokens) {
  std::vector<Json> records = {
      {{"kind", "op"}, {"name", "aten::relu"}, {"usable", true}, {"schema", "aten::relu(Tensor self) -> Tensor"}},
      {{"kind", "op"}, {"name", "aten::cos"}, {"usable", false}, {"schema", "aten::cos(Tensor self) -> Tensor"}}};
  for (int i = 0; i < 20; ++i)
    records.push_back({{"kind", "module"}, {"name", "Block" + std::to_string(i)}, {"init_signature", "(self)"}});
  LlmOptions options;
  options.max_tokens = 512;
  LlmComposer composer(records, options, nullptr);
  size_t ops = 0, modules = 0;
  for (int i = 0; i < 200; ++i) {
    LlmRequest request = composer.prepare();
    EXPECT_EQ(request.index, size_t(i));
    Json body = Json::parse(request.body);
    EXPECT_EQ(body["max_tokens"], 512);
    std::string prompt = body["messages"][1]["content"];
    EXPECT_EQ(prompt.find("aten::cos"), std::string::npos) << "an op that is not usable was drawn";
    for (size_t at = prompt.find("- operator"); at != std::string::npos; at = prompt.find("- operator", at + 1)) ++ops;
    for (size_t at = prompt.find("- module"); at != std::string::npos; at = prompt.find("- module", at + 1)) ++modules;
  }
  // One usable op against 20 modules, drawn at even odds: about as many op lines as module lines (700 draws).
  EXPECT_GT(ops, (ops + modules) * 4 / 10);
  EXPECT_LT(ops, (ops + modules) * 6 / 10);
  EXPECT_FALSE(Json::parse(chat_request(LlmOptions{}, "p", 1).dump()).contains("max_tokens"));
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
      case 2:
        return reply_with("```python\nclass Model: pass\n```");
      case 3:
        return reply_with("```python\ndef get_inputs(:\n```");
      default:
        // nn.Linear(32, 16) on inputs of 64 features.
        return reply_with(
            "```python\nimport torch\nimport torch.nn as nn\nclass Model(nn.Module):\n    def __init__(self):\n"
            "        super().__init__()\n        self.linear = nn.Linear(32, 16)\n    def forward(self, x):\n"
            "        return self.linear(x)\ndef get_inputs():\n    return [torch.randn(8, 64)]\n"
            "def get_init_inputs():\n    return []\n```");
    }
  };
  LlmComposer composer(records, options, post);
  EXPECT_EQ(composer.next().error(), "http: Couldn't connect to server");
  EXPECT_EQ(composer.next().error(), "no code: no code block in the reply");
  // The real importer (bridge/import_kernelbench.py) names the stage: a file without get_inputs does not load, ...
  std::string failed = composer.next().error();
  EXPECT_TRUE(failed.starts_with("load: ")) << failed;
  // ... one that does not parse is a syntax error, and one whose forward multiplies mismatched shapes a shape error.
  failed = composer.next().error();
  EXPECT_TRUE(failed.starts_with("syntax: SyntaxError")) << failed;
  failed = composer.next().error();
  EXPECT_TRUE(failed.starts_with("shape: RuntimeError")) << failed;
  EXPECT_EQ(urls[0], "http://127.0.0.1:9/v1/chat/completions");
  EXPECT_EQ(composer.answers(), 4u);
  EXPECT_EQ(composer.summary(),
            "0 tasks from 5 requests (4 answers); failed: http 1, load 1, no code 1, shape 1, syntax 1");
}

}  // namespace
}  // namespace ca
