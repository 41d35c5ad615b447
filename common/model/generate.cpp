// The decoding loop: one prefill of the left-padded batch, then one token per step for every sequence still
// running, through the cache; sampling on float32 logits.
#include "model/generate.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <c10/core/GradMode.h>

#include <algorithm>

#include "model/transformer.h"
#include "util/atomic_file.h"

namespace ca::model {

struct Generator::Impl {
  Transformer model;
  Tokenizer tokenizer;
  std::vector<int32_t> eos;
};

Generator::Generator(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}
Generator::Generator(Generator&&) noexcept = default;
Generator& Generator::operator=(Generator&&) noexcept = default;
Generator::~Generator() = default;

namespace {

void add_ids(const Json& v, std::vector<int32_t>& out) {
  if (v.is_number_integer()) {
    out.push_back(v.get<int32_t>());
  } else if (v.is_array()) {
    for (const Json& x : v) {
      add_ids(x, out);
    }
  }
}

// Logits [B, V] -> the distribution sampled from, after temperature, top-k and top-p (transformers' order).
at::Tensor sampling_logits(at::Tensor logits, const SamplingParams& p) {
  logits = logits / p.temperature;
  const int64_t vocab = logits.size(-1);
  if (p.top_k > 0 && p.top_k < vocab) {
    at::Tensor kth = std::get<0>(logits.topk(p.top_k, -1)).narrow(-1, p.top_k - 1, 1);
    logits = logits.masked_fill(logits < kth, -INFINITY);
  }
  if (p.top_p < 1.0) {
    auto [sorted, order] = logits.sort(-1, /*descending=*/false);
    at::Tensor cumulative = sorted.softmax(-1).cumsum(-1);
    at::Tensor drop = cumulative <= (1.0 - p.top_p);
    drop.narrow(-1, vocab - 1, 1).fill_(false);  // the most likely token always stays
    logits = logits.masked_fill(drop.scatter(-1, order, drop), -INFINITY);
  }
  return logits;
}

}  // namespace

std::expected<Generator, std::string> Generator::load(const std::filesystem::path& dir, const std::string& device,
                                                      const std::string& dtype) {
  if (dtype != "float32" && dtype != "bfloat16") {
    return std::unexpected("dtype '" + dtype + "' is not one of: float32, bfloat16");
  }
  std::optional<at::Device> dev;
  try {  // LibTorch reports a bad device string by exception; it stops here
    dev = at::Device(device);
  } catch (const std::exception&) {
    return std::unexpected("device '" + device + "' is not a device (cpu, cuda, cuda:N)");
  }
  if (dev->is_cuda() && !at::hasCUDA()) {
    return std::unexpected("device '" + device + "': no CUDA device here");
  }
  auto model = Transformer::load(dir, *dev, dtype == "bfloat16" ? at::kBFloat16 : at::kFloat);
  if (!model) {
    return std::unexpected(model.error());
  }
  auto tokenizer = Tokenizer::load(dir / "tokenizer.json");
  if (!tokenizer) {
    return std::unexpected(tokenizer.error());
  }
  auto impl = std::make_unique<Impl>(Impl{std::move(*model), std::move(*tokenizer), {}});
  for (const char* file : {"generation_config.json", "config.json"}) {
    auto text = read_file((dir / file).string());
    if (text) {
      add_ids(Json::parse(*text, nullptr, false).value("eos_token_id", Json()), impl->eos);
    }
  }
  // The chat's end of turn ends a turn whatever the configs say (converted GGUFs name another eos).
  for (const char* token : {"<|im_end|>", "<|endoftext|>", "<|eot_id|>"}) {
    if (auto id = impl->tokenizer.token_id(token); id && impl->tokenizer.is_special(*id)) {
      impl->eos.push_back(*id);
    }
  }
  std::sort(impl->eos.begin(), impl->eos.end());
  impl->eos.erase(std::unique(impl->eos.begin(), impl->eos.end()), impl->eos.end());
  return Generator(std::move(impl));
}

const Tokenizer& Generator::tokenizer() const {
  return m_impl->tokenizer;
}
const Transformer& Generator::model() const {
  return m_impl->model;
}
const std::vector<int32_t>& Generator::eos_ids() const {
  return m_impl->eos;
}

std::expected<std::vector<Completion>, std::string> Generator::generate(
    const std::vector<std::vector<int32_t>>& prompts, const SamplingParams& params) const {
  const Transformer& model = m_impl->model;
  const ModelConfig& config = model.config();
  const int64_t batch = static_cast<int64_t>(prompts.size());
  if (batch == 0) {
    return std::vector<Completion>{};
  }
  size_t longest = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    if (prompts[i].empty()) {
      return std::unexpected("prompt " + std::to_string(i) + " is empty");
    }
    for (int32_t id : prompts[i]) {
      if (id < 0 || id >= config.vocab_size) {
        return std::unexpected("prompt " + std::to_string(i) + ": token id " + std::to_string(id) +
                               " is outside the vocabulary (" + std::to_string(config.vocab_size) + ")");
      }
    }
    longest = std::max(longest, prompts[i].size());
  }
  const int64_t width = static_cast<int64_t>(longest), total = width + params.max_tokens;
  if (total > config.max_position_embeddings) {
    return std::unexpected("prompt of " + std::to_string(width) + " tokens plus max_tokens " +
                           std::to_string(params.max_tokens) + " exceeds max_position_embeddings " +
                           std::to_string(config.max_position_embeddings));
  }
  c10::AutoGradMode no_grad(false);
  const at::Device device = model.device();
  // Left padding: every sequence's next token lands in the same column.
  at::Tensor ids = at::zeros({batch, width}, at::kLong);
  at::Tensor key_mask = at::zeros({batch, total}, at::kBool);
  at::Tensor positions = at::zeros({batch, width}, at::kLong);
  for (int64_t b = 0; b < batch; ++b) {
    const auto& p = prompts[static_cast<size_t>(b)];
    const int64_t pad = width - static_cast<int64_t>(p.size());
    for (size_t k = 0; k < p.size(); ++k) {
      ids[b][pad + static_cast<int64_t>(k)] = p[k];
      positions[b][pad + static_cast<int64_t>(k)] = static_cast<int64_t>(k);
    }
    key_mask[b].narrow(0, pad, total - pad).fill_(true);
  }
  ids = ids.to(device);
  key_mask = key_mask.to(device);
  positions = positions.to(device);
  at::Generator rng = at::make_generator<at::CPUGeneratorImpl>(params.seed);
  KvCache cache = model.make_cache(batch, total);
  at::Tensor logits = model.forward(ids, positions, key_mask.narrow(1, 0, width), &cache, true).squeeze(1);
  at::Tensor next_pos = positions.narrow(1, width - 1, 1) + 1;
  std::vector<Completion> out(static_cast<size_t>(batch));
  std::vector<bool> done(static_cast<size_t>(batch), false);
  for (int64_t step = 0; step < params.max_tokens; ++step) {
    at::Tensor logprobs = logits.log_softmax(-1);
    at::Tensor chosen;
    if (params.temperature <= 0) {
      chosen = logits.argmax(-1);
    } else {
      // Sampled on the CPU with the seeded generator, so that a seed gives the same tokens on every device.
      at::Tensor probs = sampling_logits(logits, params).softmax(-1).to(at::kCPU);
      chosen = at::multinomial(probs, 1, false, rng).squeeze(1).to(device);
    }
    at::Tensor chosen_logprob = logprobs.gather(-1, chosen.unsqueeze(-1)).squeeze(-1).to(at::kCPU).to(at::kDouble);
    at::Tensor chosen_cpu = chosen.to(at::kCPU);
    const auto* tok = chosen_cpu.data_ptr<int64_t>();
    const auto* lp = chosen_logprob.data_ptr<double>();
    at::Tensor top_lp, top_id;
    const int64_t top = std::min<int64_t>(params.top_logprobs, logprobs.size(-1));
    if (top > 0) {
      auto [values, indices] = logprobs.topk(top, -1);
      top_lp = values.to(at::kCPU).to(at::kDouble).contiguous();
      top_id = indices.to(at::kCPU).contiguous();
    }
    bool all_done = true;
    for (int64_t b = 0; b < batch; ++b) {
      if (done[static_cast<size_t>(b)]) {
        continue;
      }
      Completion& c = out[static_cast<size_t>(b)];
      c.ids.push_back(static_cast<int32_t>(tok[b]));
      c.logprobs.push_back(lp[b]);
      if (top > 0) {
        auto& alternatives = c.top_logprobs.emplace_back();
        for (int64_t k = 0; k < top; ++k) {
          alternatives.emplace_back(static_cast<int32_t>(top_id.data_ptr<int64_t>()[b * top + k]),
                                    top_lp.data_ptr<double>()[b * top + k]);
        }
      }
      if (std::find(params.stop_ids.begin(), params.stop_ids.end(), tok[b]) != params.stop_ids.end()) {
        c.finish_reason = "stop";
        done[static_cast<size_t>(b)] = true;
      } else if (static_cast<int64_t>(c.ids.size()) == params.max_tokens) {
        c.finish_reason = "length";
        done[static_cast<size_t>(b)] = true;
      }
      all_done = all_done && done[static_cast<size_t>(b)];
    }
    if (all_done) {
      break;
    }
    // Finished sequences keep decoding (their tokens are not kept): one batch shape for every step.
    const int64_t filled = cache.length + 1;
    logits = model.forward(chosen.view({batch, 1}), next_pos, key_mask.narrow(1, 0, filled), &cache, true).squeeze(1);
    next_pos = next_pos + 1;
  }
  return out;
}

}  // namespace ca::model
