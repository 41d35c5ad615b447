#include "crawl/module_records.h"

#include <gtest/gtest.h>

namespace ca {

TEST(ModuleRoleTest, NamesTheBlocksAComposerPicks) {
  EXPECT_EQ(module_role("LlamaAttention"), "attention");
  EXPECT_EQ(module_role("GPT2Attn"), "attention");
  EXPECT_EQ(module_role("Qwen2MLP"), "mlp");
  EXPECT_EQ(module_role("BertFeedForward"), "mlp");
  EXPECT_EQ(module_role("LlamaRMSNorm"), "norm");
  EXPECT_EQ(module_role("LlamaRotaryEmbedding"), "rotary_embedding");
  EXPECT_EQ(module_role("BertEmbeddings"), "embedding");
  EXPECT_EQ(module_role("LlamaDecoderLayer"), "other");
}

TEST(ConfigFieldsTest, ReadsConfigAndSelfConfigOnceEachSorted) {
  std::string source =
      "def __init__(self, config):\n"
      "    self.hidden = config.hidden_size\n"
      "    self.heads = config.num_attention_heads\n"
      "    self.eps = self.config.rms_norm_eps\n"
      "    self.x = myconfig.not_this + config.hidden_size\n"
      "    getattr(config, 'ignored', None)\n";
  EXPECT_EQ(config_fields(source), (std::vector<std::string>{"hidden_size", "num_attention_heads", "rms_norm_eps"}));
  EXPECT_TRUE(config_fields("config.").empty());
}

TEST(ModuleRecordTest, CarriesInitSourceRoleAndConfigFields) {
  PyModule module;
  module.name = "TinyMLP";
  module.file = "m.py";
  module.line = 3;
  module.init_signature = "(self, config)";
  module.init_source = "def __init__(self, config):\n    self.w = config.intermediate_size\n";
  module.forward_source = "def forward(self, x):\n    return x * self.config.scale\n";
  Json record = module_record(module, "tree");
  EXPECT_EQ(record["role"], "mlp");
  EXPECT_EQ(record["init_source"], module.init_source);
  EXPECT_EQ(record["config_fields"], Json::array({"intermediate_size", "scale"}));
}

}  // namespace ca
