// The Llama/Qwen2/Qwen3 decoder as transformers' modeling code computes it (RMSNorm in float32, rotate_half
// rotary embeddings, SDPA attention with grouped keys and values, SwiGLU), weights kept by their Hugging Face
// names so that loading and saving are a mapping of files to tensors.
#include "model/transformer.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <numbers>
#include <set>

#include "ir/safetensors.h"
#include "util/atomic_file.h"

namespace ca::model {
namespace {

using Weights = std::map<std::string, at::Tensor>;

std::optional<at::ScalarType> scalar_type(DType d) {
  switch (d) {
    case DType::float32:
      return at::kFloat;
    case DType::bfloat16:
      return at::kBFloat16;
    case DType::float16:
      return at::kHalf;
    default:
      return std::nullopt;
  }
}

// A read-only mapping of a whole file, unmapped when it goes out of scope.
class MappedFile {
 public:
  static std::expected<MappedFile, std::string> open(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      return std::unexpected(path + ": " + std::strerror(errno));
    }
    struct stat st {};
    ::fstat(fd, &st);
    void* p =
        st.st_size > 0 ? ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0) : nullptr;
    ::close(fd);
    if (p == MAP_FAILED) {
      return std::unexpected(path + ": cannot map: " + std::strerror(errno));
    }
    return MappedFile(static_cast<const uint8_t*>(p), static_cast<size_t>(st.st_size));
  }
  MappedFile(MappedFile&& o) noexcept : m_data(std::exchange(o.m_data, nullptr)), m_size(o.m_size) {}
  ~MappedFile() {
    if (m_data != nullptr) {
      ::munmap(const_cast<uint8_t*>(m_data), m_size);
    }
  }
  const uint8_t* data() const { return m_data; }
  size_t size() const { return m_size; }

 private:
  MappedFile(const uint8_t* d, size_t n) : m_data(d), m_size(n) {}
  const uint8_t* m_data;
  size_t m_size;
};

std::expected<void, std::string> read_shard(const std::string& path, at::ScalarType dtype, Weights& out) {
  auto entries = read_safetensors_header(path);
  if (!entries) {
    return std::unexpected(entries.error());
  }
  auto file = MappedFile::open(path);
  if (!file) {
    return std::unexpected(file.error());
  }
  uint64_t header = 0;
  std::memcpy(&header, file->data(), 8);
  const uint8_t* data = file->data() + 8 + header;
  for (const SafetensorsEntry& e : *entries) {
    auto type = scalar_type(e.dtype);
    if (!type) {
      return std::unexpected(path + ": " + e.key + ": dtype " + std::string(dtype_name(e.dtype)) +
                             " is not a float type");
    }
    // from_blob does not own the mapping: the conversion (or clone) copies before the file is unmapped.
    at::Tensor t = at::from_blob(const_cast<uint8_t*>(data + e.begin), e.shape, at::TensorOptions().dtype(*type));
    out[e.key] = t.to(dtype).clone();
  }
  return {};
}

std::expected<Json, std::string> read_json(const std::filesystem::path& path) {
  auto text = read_file(path.string());
  if (!text) {
    return std::unexpected(text.error());
  }
  Json j = Json::parse(*text, nullptr, false);
  if (j.is_discarded()) {
    return std::unexpected(path.string() + ": " + json_parse_error(*text));
  }
  return j;
}

}  // namespace

std::expected<Transformer, std::string> Transformer::load(const std::filesystem::path& dir, at::Device device,
                                                          at::ScalarType dtype) {
  if (dtype != at::kFloat && dtype != at::kBFloat16) {
    return std::unexpected("dtype must be float32 or bfloat16");
  }
  auto config_json = read_json(dir / "config.json");
  if (!config_json) {
    return std::unexpected(config_json.error());
  }
  auto config = parse_config(*config_json);
  if (!config) {
    return std::unexpected((dir / "config.json").string() + ": " + config.error());
  }
  std::set<std::string> shards;
  if (std::filesystem::exists(dir / "model.safetensors.index.json")) {
    auto index = read_json(dir / "model.safetensors.index.json");
    if (!index) {
      return std::unexpected(index.error());
    }
    const Json weight_map = index->value("weight_map", Json::object());
    for (const auto& [key, file] : weight_map.items()) {
      shards.insert(file.get<std::string>());
    }
  } else {
    shards.insert("model.safetensors");
  }
  Weights weights;
  for (const std::string& shard : shards) {
    if (auto r = read_shard((dir / shard).string(), dtype, weights); !r) {
      return std::unexpected(r.error());
    }
  }
  for (auto& [name, t] : weights) {
    t = t.to(device);
  }
  auto model = from_weights(std::move(*config), std::move(weights));
  if (!model) {
    return std::unexpected(dir.string() + ": " + model.error());
  }
  return model;
}

std::expected<Transformer, std::string> Transformer::from_weights(ModelConfig config, Weights weights) {
  const ModelConfig& c = config;
  std::string error;
  // Takes the weight `name`, which must have `shape`; an empty tensor (and an error) when it has not.
  auto take = [&](const std::string& name, std::vector<int64_t> shape) -> at::Tensor {
    auto it = weights.find(name);
    if (it == weights.end()) {
      error = error.empty() ? "missing weight " + name : error;
      return {};
    }
    if (it->second.sizes() != at::IntArrayRef(shape)) {
      error = error.empty()
                  ? name + ": shape " + c10::str(it->second.sizes()) + ", expected " + c10::str(at::IntArrayRef(shape))
                  : error;
    }
    return it->second;
  };
  Transformer m;
  const int64_t h = c.hidden_size, q_dim = c.num_heads * c.head_dim, kv_dim = c.num_kv_heads * c.head_dim;
  m.m_embed = take("model.embed_tokens.weight", {c.vocab_size, h});
  m.m_norm = take("model.norm.weight", {h});
  if (c.tie_word_embeddings) {
    weights.erase("lm_head.weight");  // transformers ties it to the embedding whatever the file holds
    m.m_lm_head = m.m_embed;
  } else {
    m.m_lm_head = take("lm_head.weight", {c.vocab_size, h});
  }
  for (int64_t i = 0; i < c.num_layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    Layer l;
    l.input_norm = take(p + "input_layernorm.weight", {h});
    l.q = take(p + "self_attn.q_proj.weight", {q_dim, h});
    l.k = take(p + "self_attn.k_proj.weight", {kv_dim, h});
    l.v = take(p + "self_attn.v_proj.weight", {kv_dim, h});
    l.o = take(p + "self_attn.o_proj.weight", {h, q_dim});
    if (c.attention_bias) {
      l.q_bias = take(p + "self_attn.q_proj.bias", {q_dim});
      l.k_bias = take(p + "self_attn.k_proj.bias", {kv_dim});
      l.v_bias = take(p + "self_attn.v_proj.bias", {kv_dim});
    }
    if (c.architecture == Architecture::qwen3) {
      l.q_norm = take(p + "self_attn.q_norm.weight", {c.head_dim});
      l.k_norm = take(p + "self_attn.k_norm.weight", {c.head_dim});
    }
    l.post_norm = take(p + "post_attention_layernorm.weight", {h});
    l.gate = take(p + "mlp.gate_proj.weight", {c.intermediate_size, h});
    l.up = take(p + "mlp.up_proj.weight", {c.intermediate_size, h});
    l.down = take(p + "mlp.down_proj.weight", {h, c.intermediate_size});
    m.m_layers.push_back(std::move(l));
  }
  if (!error.empty()) {
    return std::unexpected(error);
  }
  // inv_freq as transformers computes it, in float32 (compute_default_rope_parameters and the llama3 variant).
  const auto f32 = at::TensorOptions().dtype(at::kFloat);
  at::Tensor exponent = at::arange(0, c.head_dim, 2, at::TensorOptions().dtype(at::kLong)).to(at::kFloat) /
                        static_cast<double>(c.head_dim);
  at::Tensor inv_freq = 1.0 / at::pow(c.rope_theta, exponent);
  const RopeScaling& s = c.rope_scaling;
  if (s.type == "linear") {
    inv_freq = inv_freq / s.factor;
  } else if (s.type == "llama3") {
    const double old_len = static_cast<double>(s.original_max_position_embeddings);
    const double low_wavelen = old_len / s.low_freq_factor, high_wavelen = old_len / s.high_freq_factor;
    at::Tensor wavelen = 2 * std::numbers::pi / inv_freq;
    at::Tensor scaled = at::where(wavelen > low_wavelen, inv_freq / s.factor, inv_freq);
    at::Tensor smooth = (old_len / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
    at::Tensor smoothed = (1 - smooth) * scaled / s.factor + smooth * scaled;
    at::Tensor medium = (wavelen >= high_wavelen).logical_and(wavelen <= low_wavelen);
    inv_freq = at::where(medium, smoothed, scaled);
  }
  m.m_inv_freq = inv_freq.to(f32).to(m.m_embed.device());
  m.m_config = std::move(config);
  m.m_weights = std::move(weights);
  return m;
}

std::expected<void, std::string> Transformer::save(const std::filesystem::path& dir) const {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return std::unexpected(dir.string() + ": " + ec.message());
  }
  Json config = m_config.raw;
  const char* dtype_str = dtype() == at::kBFloat16 ? "bfloat16" : "float32";
  config[config.contains("torch_dtype") ? "torch_dtype" : "dtype"] = dtype_str;
  if (auto r = write_file_atomic((dir / "config.json").string(), config.dump(2) + "\n"); !r) {
    return r;
  }
  std::vector<at::Tensor> keep;  // CPU copies the spans point into
  std::vector<SafetensorsTensor> tensors;
  for (const auto& [name, t] : m_weights) {
    at::Tensor cpu = t.detach().to(at::kCPU).contiguous();
    keep.push_back(cpu);
    const DType d = cpu.scalar_type() == at::kBFloat16 ? DType::bfloat16 : DType::float32;
    tensors.push_back({name, d, cpu.sizes().vec(),
                       std::span(static_cast<const uint8_t*>(cpu.data_ptr()), cpu.numel() * cpu.element_size())});
  }
  return write_safetensors((dir / "model.safetensors").string(), tensors);
}

KvCache Transformer::make_cache(int64_t batch, int64_t capacity) const {
  KvCache cache;
  cache.capacity = capacity;
  auto options = m_embed.options().requires_grad(false);
  for (size_t i = 0; i < m_layers.size(); ++i) {
    cache.keys.push_back(at::empty({batch, m_config.num_kv_heads, capacity, m_config.head_dim}, options));
    cache.values.push_back(at::empty({batch, m_config.num_kv_heads, capacity, m_config.head_dim}, options));
  }
  return cache;
}

at::Tensor Transformer::rms_norm(const at::Tensor& x, const at::Tensor& weight) const {
  at::Tensor f = x.to(at::kFloat);
  f = f * at::rsqrt(f.pow(2).mean(-1, true) + m_config.rms_norm_eps);
  return weight * f.to(x.scalar_type());
}

std::pair<at::Tensor, at::Tensor> Transformer::rope(const at::Tensor& positions, at::ScalarType dtype) const {
  at::Tensor freqs = positions.to(at::kFloat).unsqueeze(-1) * m_inv_freq;  // [B, T, head_dim / 2]
  at::Tensor emb = at::cat({freqs, freqs}, -1).unsqueeze(1);               // [B, 1, T, head_dim]
  return {emb.cos().to(dtype), emb.sin().to(dtype)};
}

namespace {

at::Tensor rotate_half(const at::Tensor& x) {
  const int64_t half = x.size(-1) / 2;
  return at::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
}

}  // namespace

at::Tensor Transformer::forward(const at::Tensor& ids, const at::Tensor& positions, const at::Tensor& key_mask,
                                KvCache* cache, bool last_only) const {
  return at::linear(hidden_states(ids, positions, key_mask, cache, last_only), m_lm_head).to(at::kFloat);
}

at::Tensor Transformer::hidden_states(const at::Tensor& ids, const at::Tensor& positions, const at::Tensor& key_mask,
                                      KvCache* cache, bool last_only) const {
  const ModelConfig& c = m_config;
  const int64_t batch = ids.size(0), tokens = ids.size(1);
  const int64_t past = cache != nullptr ? cache->length : 0, total = past + tokens;
  at::Tensor h = at::embedding(m_embed, ids, m_config.pad_token_id);
  auto [cos, sin] = rope(positions, h.scalar_type());
  // Which keys each query may see: causal, not padding, and always itself (a padding row attending to
  // nothing would make NaNs that reach the real rows through 0 * NaN in the next layer's values).
  at::Tensor mask;
  const bool causal_only = !key_mask.defined() && cache == nullptr;
  if (!causal_only && (key_mask.defined() || tokens > 1)) {
    auto long_options = at::TensorOptions().dtype(at::kLong).device(ids.device());
    at::Tensor q_pos = at::arange(past, total, long_options).view({tokens, 1});
    at::Tensor k_pos = at::arange(0, total, long_options).view({1, total});
    mask = (k_pos <= q_pos).view({1, 1, tokens, total});
    if (key_mask.defined()) {
      mask = mask.logical_and(key_mask.view({batch, 1, 1, total})).logical_or(k_pos == q_pos);
    }
  }
  const double scale = 1.0 / std::sqrt(static_cast<double>(c.head_dim));
  const std::optional<at::Tensor> attn_mask = mask.defined() ? std::optional<at::Tensor>(mask) : std::nullopt;
  for (size_t i = 0; i < m_layers.size(); ++i) {
    const Layer& l = m_layers[i];
    at::Tensor x = rms_norm(h, l.input_norm);
    at::Tensor q = at::linear(x, l.q, l.q_bias).view({batch, tokens, c.num_heads, c.head_dim});
    at::Tensor k = at::linear(x, l.k, l.k_bias).view({batch, tokens, c.num_kv_heads, c.head_dim});
    at::Tensor v = at::linear(x, l.v, l.v_bias).view({batch, tokens, c.num_kv_heads, c.head_dim}).transpose(1, 2);
    if (l.q_norm.defined()) {
      q = rms_norm(q, l.q_norm);
      k = rms_norm(k, l.k_norm);
    }
    q = q.transpose(1, 2);
    k = k.transpose(1, 2);
    q = q * cos + rotate_half(q) * sin;
    k = k * cos + rotate_half(k) * sin;
    if (cache != nullptr) {
      cache->keys[i].narrow(2, past, tokens).copy_(k);
      cache->values[i].narrow(2, past, tokens).copy_(v);
      k = cache->keys[i].narrow(2, 0, total);
      v = cache->values[i].narrow(2, 0, total);
    }
    at::Tensor a =
        at::scaled_dot_product_attention(q, k, v, attn_mask, 0.0, causal_only, scale, c.num_kv_heads != c.num_heads);
    h = h + at::linear(a.transpose(1, 2).reshape({batch, tokens, c.num_heads * c.head_dim}), l.o);
    x = rms_norm(h, l.post_norm);
    h = h + at::linear(at::silu(at::linear(x, l.gate)) * at::linear(x, l.up), l.down);
  }
  if (cache != nullptr) {
    cache->length = total;
  }
  if (last_only) {
    h = h.narrow(1, tokens - 1, 1);
  }
  return rms_norm(h, m_norm);
}

}  // namespace ca::model
