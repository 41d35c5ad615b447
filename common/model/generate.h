// Generation from the transformer: batches of prompts of different lengths (left-padded, one key/value cache),
// temperature, top-k, top-p, a seed, stop tokens and a token budget; returns token ids and their logprobs.
// Free of LibTorch types, so that callers (ca-rollout's local policy, ca-model) need not include ATen.
#pragma once

#include <cstdint>
#include <expected>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "model/tokenizer.h"

namespace ca::model {

class Transformer;

struct SamplingParams {
  double temperature = 1.0;  // 0: greedy
  double top_p = 1.0;        // nucleus: the fewest most likely tokens whose probability reaches top_p
  int64_t top_k = 0;         // 0: no limit
  uint64_t seed = 0;
  int64_t max_tokens = 256;
  std::vector<int32_t> stop_ids;  // ends a sequence (the stop token is kept in ids)
  int64_t top_logprobs = 0;       // the most likely tokens of each step to return with their logprobs (OpenAI's)
};

struct Completion {
  std::vector<int32_t> ids;
  /// log p(token) under the model's own distribution (temperature 1, nothing cut), as a forward pass over the
  /// prompt and the completion recomputes it: what on-policy training compares against.
  std::vector<double> logprobs;
  std::string finish_reason;  // "stop" (a stop token) or "length" (max_tokens)
  /// Per token, when SamplingParams::top_logprobs > 0: that many (id, logprob) of the same distribution, most
  /// likely first.
  std::vector<std::vector<std::pair<int32_t, double>>> top_logprobs;
};

class Generator {
 public:
  /// Loads a checkpoint directory (config.json, safetensors, tokenizer.json) on `device` ("cpu", "cuda",
  /// "cuda:1") as `dtype` ("float32", "bfloat16"). Errors name the file or the bad value.
  static std::expected<Generator, std::string> load(const std::filesystem::path& dir, const std::string& device = "cpu",
                                                    const std::string& dtype = "float32");
  Generator(Generator&&) noexcept;
  Generator& operator=(Generator&&) noexcept;
  ~Generator();

  /// One completion per prompt (token ids), in order. An error for an empty prompt, an id out of the
  /// vocabulary, or prompt plus max_tokens past the model's max_position_embeddings.
  std::expected<std::vector<Completion>, std::string> generate(const std::vector<std::vector<int32_t>>& prompts,
                                                               const SamplingParams& params) const;

  const Tokenizer& tokenizer() const;
  /// The model (transformer.h), for training and for recomputing logprobs.
  const Transformer& model() const;
  /// The eos ids of generation_config.json or config.json (the chat's end-of-turn token among them).
  const std::vector<int32_t>& eos_ids() const;

 private:
  struct Impl;
  explicit Generator(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> m_impl;
};

}  // namespace ca::model
