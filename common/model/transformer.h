// The decoder-only transformer over ATen: Hugging Face checkpoints (config.json + safetensors, single or sharded)
// in and out, a forward pass with a key/value cache for generation and without one for training. This header is
// the one of ca_model that shows ATen types (for ca-train); the tokenizer, template and generation's are free of it.
#pragma once

#include <ATen/ATen.h>

#include <expected>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "model/config.h"

namespace ca::model {

/// Keys and values of every layer for a batch, [batch, kv_heads, capacity, head_dim]; `length` positions are filled.
struct KvCache {
  std::vector<at::Tensor> keys, values;
  int64_t length = 0;
  int64_t capacity = 0;
};

class Transformer {
 public:
  /// Loads config.json and the safetensors weights (model.safetensors, or the shards model.safetensors.index.json
  /// names) from `dir` onto `device` as `dtype` (float32 or bfloat16). Errors name the file and the tensor that is
  /// missing or has the wrong shape.
  static std::expected<Transformer, std::string> load(const std::filesystem::path& dir, at::Device device = at::kCPU,
                                                      at::ScalarType dtype = at::kFloat);
  /// A model with the given config and `weights` (Hugging Face names); checks that every weight is there.
  static std::expected<Transformer, std::string> from_weights(ModelConfig config,
                                                              std::map<std::string, at::Tensor> weights);

  /// Writes config.json and model.safetensors (in the weights' dtype) into `dir` (created), each file atomically.
  std::expected<void, std::string> save(const std::filesystem::path& dir) const;

  /// Logits [batch, tokens, vocab] (float32) for `ids` [batch, tokens] (int64) at `positions` [batch, tokens].
  /// `key_mask` [batch, cache length + tokens] (bool, true where a key may be attended: not padding) or undefined
  /// (none is padding). With `cache`, its keys come first and the new ones are appended; without, the call is
  /// the whole sequence and keeps autograd's graph (training). `last_only` computes logits of the last position.
  at::Tensor forward(const at::Tensor& ids, const at::Tensor& positions, const at::Tensor& key_mask,
                     KvCache* cache = nullptr, bool last_only = false) const;
  /// The final hidden states [batch, tokens, hidden] (after the last RMSNorm, what the output head reads; the
  /// weights' dtype) with forward's arguments: what a value head or a reward model's `score` projects.
  at::Tensor hidden_states(const at::Tensor& ids, const at::Tensor& positions, const at::Tensor& key_mask,
                           KvCache* cache = nullptr, bool last_only = false) const;

  /// An empty cache for `batch` sequences of up to `capacity` tokens.
  KvCache make_cache(int64_t batch, int64_t capacity) const;

  const ModelConfig& config() const { return m_config; }
  /// The parameters by Hugging Face name (shared storage: what training updates, the model uses).
  const std::map<std::string, at::Tensor>& weights() const { return m_weights; }
  at::Device device() const { return m_embed.device(); }
  at::ScalarType dtype() const { return m_embed.scalar_type(); }

 private:
  struct Layer {
    at::Tensor input_norm, q, k, v, o, q_bias, k_bias, v_bias, q_norm, k_norm, post_norm, gate, up, down;
  };
  Transformer() = default;
  at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight) const;
  std::pair<at::Tensor, at::Tensor> rope(const at::Tensor& positions, at::ScalarType dtype) const;

  ModelConfig m_config;
  std::map<std::string, at::Tensor> m_weights;
  at::Tensor m_embed, m_norm, m_lm_head, m_inv_freq;
  std::vector<Layer> m_layers;
};

}  // namespace ca::model
