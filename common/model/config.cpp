// config.json -> ModelConfig: the defaults are transformers' for each model_type.
#include "model/config.h"

namespace ca::model {
namespace {

std::expected<int64_t, std::string> positive(const Json& j, const char* key) {
  if (!j.contains(key) || !j[key].is_number_integer() || j[key].get<int64_t>() <= 0) {
    return std::unexpected(std::string("config.json: ") + key + ": missing or not a positive integer");
  }
  return j[key].get<int64_t>();
}

}  // namespace

std::expected<ModelConfig, std::string> parse_config(const Json& j) {
  ModelConfig c;
  c.raw = j;
  const std::string type = j.value("model_type", "");
  if (type == "llama" || type == "mistral") {
    c.architecture = Architecture::llama;
  } else if (type == "qwen2") {
    c.architecture = Architecture::qwen2;
  } else if (type == "qwen3") {
    c.architecture = Architecture::qwen3;
  } else {
    return std::unexpected("config.json: model_type '" + type + "' is not supported (llama, qwen2, qwen3)");
  }
  for (auto [field, key] : {std::pair{&c.vocab_size, "vocab_size"},
                            {&c.hidden_size, "hidden_size"},
                            {&c.intermediate_size, "intermediate_size"},
                            {&c.num_layers, "num_hidden_layers"},
                            {&c.num_heads, "num_attention_heads"}}) {
    auto v = positive(j, key);
    if (!v) {
      return std::unexpected(v.error());
    }
    *field = *v;
  }
  c.num_kv_heads =
      j.value("num_key_value_heads", Json()).is_null() ? c.num_heads : j["num_key_value_heads"].get<int64_t>();
  c.head_dim = j.value("head_dim", Json()).is_null() ? c.hidden_size / c.num_heads : j["head_dim"].get<int64_t>();
  if (c.num_kv_heads <= 0 || c.num_heads % c.num_kv_heads != 0) {
    return std::unexpected("config.json: num_key_value_heads must divide num_attention_heads");
  }
  if (c.head_dim <= 0 || c.head_dim % 2 != 0) {
    return std::unexpected("config.json: head_dim must be a positive even number");
  }
  if (j.value("hidden_act", "silu") != "silu") {
    return std::unexpected("config.json: hidden_act '" + j.value("hidden_act", "") + "' is not supported (silu)");
  }
  c.max_position_embeddings = j.value("max_position_embeddings", int64_t{2048});
  c.rms_norm_eps = j.value("rms_norm_eps", 1e-6);
  // As nn.Embedding reads its padding_idx: a negative id counts from the end of the vocabulary.
  if (const Json& pad = j.value("pad_token_id", Json()); !pad.is_null()) {
    if (!pad.is_number_integer() || pad.get<int64_t>() < -c.vocab_size || pad.get<int64_t>() >= c.vocab_size) {
      return std::unexpected("config.json: pad_token_id must be a token id within vocab_size, or null");
    }
    c.pad_token_id = (pad.get<int64_t>() + c.vocab_size) % c.vocab_size;
  }
  c.tie_word_embeddings = j.value("tie_word_embeddings", c.architecture != Architecture::qwen2);
  c.attention_bias = c.architecture == Architecture::qwen2 || j.value("attention_bias", false);
  // transformers 5 writes rope_parameters (theta inside); 4.x wrote rope_theta and rope_scaling.
  Json rope = j.value("rope_parameters", Json());
  if (rope.is_null()) {
    rope = j.value("rope_scaling", Json());
  }
  c.rope_theta = j.value("rope_theta", 10000.0);
  if (rope.is_object()) {
    c.rope_theta = rope.value("rope_theta", c.rope_theta);
    RopeScaling& s = c.rope_scaling;
    s.type = rope.value("rope_type", rope.value("type", "default"));
    s.factor = rope.value("factor", 1.0);
    s.low_freq_factor = rope.value("low_freq_factor", 1.0);
    s.high_freq_factor = rope.value("high_freq_factor", 4.0);
    s.original_max_position_embeddings = rope.value("original_max_position_embeddings", int64_t{8192});
    if (s.type != "default" && s.type != "linear" && s.type != "llama3") {
      return std::unexpected("config.json: rope type '" + s.type + "' is not supported (default, linear, llama3)");
    }
  }
  if (j.value("mlp_bias", false)) {
    return std::unexpected("config.json: mlp_bias is not supported");
  }
  return c;
}

}  // namespace ca::model
