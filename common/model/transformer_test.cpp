#include "model/transformer.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "ir/safetensors.h"
#include "util/atomic_file.h"

namespace ca::model {
namespace {

Json tiny_config(const char* type) {
  Json j = Json::parse(R"({"vocab_size": 97, "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2,
                           "num_attention_heads": 4, "num_key_value_heads": 2, "rms_norm_eps": 1e-5,
                           "rope_theta": 10000.0, "tie_word_embeddings": false})");
  j["model_type"] = type;
  return j;
}

// Random weights of the right shapes, by asking from_weights which one is missing until none is.
Transformer random_model(const char* type) {
  auto config = parse_config(tiny_config(type));
  EXPECT_TRUE(config) << config.error();
  at::manual_seed(3);
  std::map<std::string, at::Tensor> weights;
  for (int guard = 0; guard < 100; ++guard) {
    auto m = Transformer::from_weights(*config, weights);
    if (m) {
      return std::move(*m);
    }
    const std::string& e = m.error();
    EXPECT_EQ(e.rfind("missing weight ", 0), 0u) << e;
    const std::string name = e.substr(15);
    const ModelConfig& c = *config;
    std::vector<int64_t> shape;
    if (name.find("embed") != std::string::npos || name == "lm_head.weight") {
      shape = {c.vocab_size, c.hidden_size};
    } else if (name.find("q_norm") != std::string::npos || name.find("k_norm") != std::string::npos) {
      shape = {c.head_dim};
    } else if (name.find("norm") != std::string::npos) {
      shape = {c.hidden_size};
    } else if (name.find("q_proj.bias") != std::string::npos) {
      shape = {c.num_heads * c.head_dim};
    } else if (name.find("_proj.bias") != std::string::npos) {
      shape = {c.num_kv_heads * c.head_dim};
    } else if (name.find("q_proj") != std::string::npos) {
      shape = {c.num_heads * c.head_dim, c.hidden_size};
    } else if (name.find("k_proj") != std::string::npos || name.find("v_proj") != std::string::npos) {
      shape = {c.num_kv_heads * c.head_dim, c.hidden_size};
    } else if (name.find("o_proj") != std::string::npos) {
      shape = {c.hidden_size, c.num_heads * c.head_dim};
    } else if (name.find("down_proj") != std::string::npos) {
      shape = {c.hidden_size, c.intermediate_size};
    } else {
      shape = {c.intermediate_size, c.hidden_size};
    }
    weights[name] = at::randn(shape) * 0.2;
  }
  ADD_FAILURE() << "from_weights never satisfied";
  std::abort();
}

TEST(ModelConfigTest, ReadsTransformers5RopeParametersAndDefaults) {
  Json j = tiny_config("qwen2");
  j.erase("rope_theta");
  j["rope_parameters"] = Json::parse(R"({"rope_type": "default", "rope_theta": 1e6})");
  auto c = parse_config(j);
  ASSERT_TRUE(c) << c.error();
  EXPECT_EQ(c->rope_theta, 1e6);
  EXPECT_TRUE(c->attention_bias);  // Qwen2 always has q/k/v biases
  EXPECT_EQ(c->head_dim, 8);
}

TEST(ModelConfigTest, RejectsWhatItCannotRun) {
  Json j = tiny_config("gpt_neox");
  EXPECT_NE(parse_config(j).error().find("model_type 'gpt_neox'"), std::string::npos);
  j = tiny_config("llama");
  j["num_key_value_heads"] = 3;
  EXPECT_NE(parse_config(j).error().find("num_key_value_heads"), std::string::npos);
  j = tiny_config("llama");
  j["rope_scaling"] = Json::parse(R"({"rope_type": "yarn", "factor": 4})");
  EXPECT_NE(parse_config(j).error().find("rope type 'yarn'"), std::string::npos);
  j = tiny_config("llama");
  j.erase("hidden_size");
  EXPECT_NE(parse_config(j).error().find("hidden_size"), std::string::npos);
}

TEST(ModelConfigTest, ReadsThePaddingTokenAsNnEmbeddingDoes) {
  Json j = tiny_config("llama");
  EXPECT_EQ(parse_config(j)->pad_token_id, -1);  // none
  j["pad_token_id"] = nullptr;
  EXPECT_EQ(parse_config(j)->pad_token_id, -1);
  j["pad_token_id"] = 2;
  EXPECT_EQ(parse_config(j)->pad_token_id, 2);
  j["pad_token_id"] = -1;  // from the end of the vocabulary
  EXPECT_EQ(parse_config(j)->pad_token_id, 96);
  for (Json bad : {Json(97), Json(-98), Json("2")}) {
    j["pad_token_id"] = bad;
    EXPECT_NE(parse_config(j).error().find("pad_token_id"), std::string::npos) << bad;
  }
}

// transformers' embedding leaves the padding token's row out of the gradient (nn.Embedding's padding_idx); SmolLM2's
// padding token is <|im_end|>, in every trajectory, so training that updated it would differ from transformers'.
TEST(TransformerTest, ThePaddingTokensEmbeddingGetsNoGradientFromItsLookup) {
  Json j = tiny_config("llama");
  j["pad_token_id"] = 5;
  auto config = parse_config(j);
  ASSERT_TRUE(config) << config.error();
  std::map<std::string, at::Tensor> weights = random_model("llama").weights();
  for (auto& [name, w] : weights) w = w.detach().clone().requires_grad_(true);
  auto m = Transformer::from_weights(*config, weights);
  ASSERT_TRUE(m) << m.error();
  at::Tensor ids = at::tensor({3, 5, 7, 5}, at::kLong).view({1, 4});
  m->hidden_states(ids, at::arange(4).view({1, 4}), at::Tensor()).sum().backward();
  at::Tensor grad = m->weights().at("model.embed_tokens.weight").grad();
  ASSERT_TRUE(grad.defined());
  EXPECT_EQ(grad[5].abs().max().item<double>(), 0.0);
  EXPECT_GT(grad[3].abs().max().item<double>(), 0.0);
  EXPECT_GT(grad[7].abs().max().item<double>(), 0.0);
}

TEST(TransformerTest, WrongShapeIsNamed) {
  auto c = parse_config(tiny_config("llama"));
  std::map<std::string, at::Tensor> w{{"model.embed_tokens.weight", at::zeros({5, 5})}};
  auto m = Transformer::from_weights(*c, w);
  ASSERT_FALSE(m);
  EXPECT_NE(m.error().find("model.embed_tokens.weight: shape [5, 5], expected [97, 32]"), std::string::npos)
      << m.error();
}

TEST(TransformerTest, CachedDecodingEqualsOneFullPass) {
  for (const char* type : {"llama", "qwen2", "qwen3"}) {
    Transformer m = random_model(type);
    at::Tensor ids = at::randint(0, 97, {2, 9}, at::kLong);
    at::Tensor mask = at::ones({2, 9}, at::kBool);
    mask.index_put_({1, at::indexing::Slice(0, 3)}, false);  // the second sequence is left-padded by 3
    at::Tensor pos = (mask.to(at::kLong).cumsum(1) - 1).clamp_min(0);
    at::Tensor full = m.forward(ids, pos, mask);
    KvCache cache = m.make_cache(2, 16);
    at::Tensor first = m.forward(ids.narrow(1, 0, 5), pos.narrow(1, 0, 5), mask.narrow(1, 0, 5), &cache);
    std::vector<at::Tensor> steps{first};
    for (int64_t t = 5; t < 9; ++t) {
      steps.push_back(m.forward(ids.narrow(1, t, 1), pos.narrow(1, t, 1), mask.narrow(1, 0, t + 1), &cache));
    }
    at::Tensor incremental = at::cat(steps, 1);
    at::Tensor real = mask.unsqueeze(-1).expand_as(full);
    EXPECT_LT((full - incremental).abs().masked_select(real).max().item<double>(), 1e-5) << type;
    EXPECT_EQ(cache.length, 9);
  }
}

TEST(TransformerTest, PaddingDoesNotChangeTheRealTokens) {
  Transformer m = random_model("qwen2");
  at::Tensor ids = at::randint(0, 97, {1, 6}, at::kLong);
  at::Tensor alone = m.forward(ids, at::arange(6).view({1, 6}), at::Tensor());
  at::Tensor padded_ids = at::cat({at::zeros({1, 2}, at::kLong), ids}, 1);
  at::Tensor mask = at::cat({at::zeros({1, 2}, at::kBool), at::ones({1, 6}, at::kBool)}, 1);
  at::Tensor pos = at::cat({at::zeros({1, 2}, at::kLong), at::arange(6).view({1, 6})}, 1);
  at::Tensor padded = m.forward(padded_ids, pos, mask).narrow(1, 2, 6);
  EXPECT_LT((alone - padded).abs().max().item<double>(), 1e-5);
}

TEST(TransformerTest, SavedCheckpointLoadsWithTheSameLogits) {
  Transformer m = random_model("llama");
  const auto dir = std::filesystem::temp_directory_path() / ("ca_model_save_" + std::to_string(::getpid()));
  ASSERT_TRUE(m.save(dir));
  auto back = Transformer::load(dir);
  ASSERT_TRUE(back) << back.error();
  at::Tensor ids = at::randint(0, 97, {1, 7}, at::kLong);
  at::Tensor pos = at::arange(7).view({1, 7});
  EXPECT_TRUE(at::equal(m.forward(ids, pos, at::Tensor()), back->forward(ids, pos, at::Tensor())));
  auto bf16 = Transformer::load(dir, at::kCPU, at::kBFloat16);
  ASSERT_TRUE(bf16) << bf16.error();
  EXPECT_EQ(bf16->dtype(), at::kBFloat16);
  std::filesystem::remove_all(dir);
  auto missing = Transformer::load(dir);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().find("config.json"), std::string::npos) << missing.error();
}

at::Tensor read_tensor(const std::string& path, const std::string& key) {
  auto entries = read_safetensors_header(path);
  EXPECT_TRUE(entries) << entries.error();
  for (const auto& e : *entries) {
    if (e.key == key) {
      auto bytes = read_safetensors_tensor(path, key, e.dtype, e.shape);
      EXPECT_TRUE(bytes) << bytes.error();
      return at::from_blob(bytes->data(), e.shape, at::kFloat).clone();
    }
  }
  ADD_FAILURE() << path << " has no " << key;
  return {};
}

at::Tensor long_tensor(const Json& rows) {
  const auto v = rows.get<std::vector<std::vector<int64_t>>>();
  at::Tensor t = at::empty({static_cast<int64_t>(v.size()), static_cast<int64_t>(v[0].size())}, at::kLong);
  for (size_t i = 0; i < v.size(); ++i) {
    for (size_t j = 0; j < v[i].size(); ++j) {
      t[static_cast<int64_t>(i)][static_cast<int64_t>(j)] = v[i][j];
    }
  }
  return t;
}

// The comparison with transformers: tests/cli/model_logits.sh writes each case (tests/model/model_reference.py:
// CASE/model, CASE/inputs.json, CASE/logits.safetensors) under CA_MODEL_LOGITS_CASES; the checkpoint saved here
// (CASE/saved) goes back to transformers there.
TEST(ModelReferenceTest, LogitsEqualTransformers) {
  const char* dir = std::getenv("CA_MODEL_LOGITS_CASES");
  if (dir == nullptr) {
    GTEST_SKIP() << "CA_MODEL_LOGITS_CASES not set (tests/cli/model_logits.sh sets it)";
  }
  // CA_TEST_DEVICE=cuda (tests/gpu/model.sh) runs the C++ side on the GPU against transformers' CPU logits.
  const char* device_name = std::getenv("CA_TEST_DEVICE");
  const at::Device device = device_name != nullptr && std::string(device_name) == "cuda" ? at::kCUDA : at::kCPU;
  int cases = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const auto c = entry.path();
    const Json inputs = Json::parse(*read_file((c / "inputs.json").string()));
    at::Tensor ids = long_tensor(inputs["ids"]), pos = long_tensor(inputs["positions"]);
    at::Tensor mask = long_tensor(inputs["mask"]).to(at::kBool);
    at::Tensor real = mask.unsqueeze(-1);
    for (auto [dtype, key, tolerance] : {std::tuple{at::kFloat, "float32", 1e-4}, {at::kBFloat16, "bfloat16", 0.0}}) {
      auto m = Transformer::load(c / "model", device, dtype);
      ASSERT_TRUE(m) << m.error();
      at::Tensor got = m->forward(ids.to(device), pos.to(device), mask.to(device)).cpu();
      at::Tensor want = read_tensor((c / "logits.safetensors").string(), key);
      const double diff = (got - want).abs().masked_select(real.expand_as(got)).max().item<double>();
      const double agree = (got.argmax(-1) == want.argmax(-1)).masked_select(mask).to(at::kFloat).mean().item<double>();
      std::printf("%s %s: max abs diff %.3g, argmax agreement %.4f over %lld positions\n", c.filename().c_str(), key,
                  diff, agree, static_cast<long long>(mask.sum().item<int64_t>()));
      if (dtype == at::kFloat) {
        EXPECT_LE(diff, tolerance) << c;
        EXPECT_EQ(agree, 1.0) << c;
        if (device.is_cpu()) {  // saving is checked once, on the cpu
          ASSERT_TRUE(m->save(c / "saved"));
        }
      } else {
        // bfloat16 rounds differently along the way (ATen's kernels here against transformers' there): the
        // distributions must agree, not the bits. The printed numbers are the record.
        EXPECT_GE(agree, 0.9) << c;
      }
    }
    ++cases;
  }
  EXPECT_GE(cases, 1);
}

}  // namespace
}  // namespace ca::model
