// A decoder-only transformer's shape as Hugging Face's config.json states it, for the Llama, Qwen2 and Qwen3
// families (the keys of transformers 4.x and 5.x both: rope_theta/rope_scaling or rope_parameters).
#pragma once

#include <cstdint>
#include <expected>
#include <string>

#include "util/jsonl.h"

namespace ca::model {

enum class Architecture { llama, qwen2, qwen3 };

struct RopeScaling {
  std::string type = "default";  // default, linear, llama3
  double factor = 1.0;
  double low_freq_factor = 1.0;   // llama3
  double high_freq_factor = 4.0;  // llama3
  int64_t original_max_position_embeddings = 8192;
};

struct ModelConfig {
  Architecture architecture = Architecture::llama;
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t max_position_embeddings = 0;
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;
  bool tie_word_embeddings = false;
  // The embedding row whose gradient stays zero, as transformers' nn.Embedding(padding_idx=pad_token_id); -1: none.
  // SmolLM2's is <|im_end|>, a token every trajectory holds, so it changes what training does.
  int64_t pad_token_id = -1;
  bool attention_bias = false;  // q/k/v biases (always on for Qwen2)
  Json raw;                     // the file as read, written back on save
};

/// Reads a config.json object. Errors name the key that is missing or has a bad value, or the architecture
/// (model_type) or rope scaling that is not supported.
std::expected<ModelConfig, std::string> parse_config(const Json& json);

}  // namespace ca::model
