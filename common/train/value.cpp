// The critic and value pretraining.
#include "train/value.h"

#include <ATen/core/grad_mode.h>

#include "train/losses.h"

namespace ca::train {

namespace fs = std::filesystem;

std::expected<Critic, std::string> Critic::load(const fs::path& dir, at::Device device) {
  auto model = model::Transformer::load(dir, device, at::kFloat);
  if (!model) {
    return std::unexpected(model.error());
  }
  return from_backbone(*model);
}

std::expected<Critic, std::string> Critic::from_backbone(const model::Transformer& backbone) {
  if (backbone.weights().contains("score.weight")) {
    return Critic(backbone);
  }
  model::ModelConfig config = backbone.config();
  std::string arch = config.raw.value("architectures", Json::array({"LlamaForCausalLM"}))[0].get<std::string>();
  if (const size_t at = arch.find("ForCausalLM"); at != std::string::npos) {
    arch = arch.substr(0, at);
  }
  config.raw["architectures"] = Json::array({arch + "ForTokenClassification"});
  config.raw["num_labels"] = 1;
  std::map<std::string, at::Tensor> weights = backbone.weights();
  weights["score.weight"] = at::zeros({1, config.hidden_size}, weights.begin()->second.options());
  auto model = model::Transformer::from_weights(std::move(config), std::move(weights));
  if (!model) {
    return std::unexpected(model.error());
  }
  return Critic(std::move(*model));
}

at::Tensor Critic::values(const Batch& b) const {
  const at::Tensor h = m_model.hidden_states(b.ids, b.positions, b.key_mask);
  const at::Tensor v = at::linear(h.slice(1, 0, h.size(1) - 1), m_model.weights().at("score.weight")).squeeze(-1);
  return at::cat({at::zeros({v.size(0), 1}, v.options()), v}, 1).to(at::kFloat);
}

namespace {

// Monte-Carlo returns: GAE with gamma 1 and lambda 1 (the reward on every action token, whatever the values).
at::Tensor mc_returns(const Batch& b, const at::Tensor& values) {
  return gae(b.rewards, values.detach(), b.mask, {.gamma = 1.0, .lambda_actor = 1.0, .lambda_critic = 1.0}).returns;
}

}  // namespace

double critic_explained_variance(const Critic& critic, const std::vector<Sequence>& data, int64_t micro_batch,
                                 at::Device device) {
  at::NoGradGuard no_grad;
  std::vector<size_t> all(data.size());
  for (size_t i = 0; i < all.size(); ++i) {
    all[i] = i;
  }
  std::vector<at::Tensor> values, returns, masks;
  for (const auto& part : micro_batches(all, micro_batch)) {
    const Batch b = make_batch(data, part, device);
    const at::Tensor v = critic.values(b);
    values.push_back(v.flatten());
    returns.push_back(mc_returns(b, v).flatten());
    masks.push_back(b.mask.flatten());
  }
  return explained_variance(at::cat(values), at::cat(returns), at::cat(masks));
}

std::expected<ValueResult, std::string> train_value(const TrainOptions& o, const std::vector<Sequence>& data,
                                                    const std::function<void(const Json&)>& on_step) {
  if (data.empty()) {
    return std::unexpected("no training sequences");
  }
  auto device = parse_device(o.device);
  if (!device) {
    return std::unexpected(device.error());
  }
  Json identity = run_identity(o, data.size());
  identity["stage"] = "value";
  auto trainer = Trainer::open(o, identity);
  if (!trainer) {
    return std::unexpected(trainer.error());
  }
  auto critic = Critic::load(trainer->resumed_from().value_or(o.model), *device);
  if (!critic) {
    return std::unexpected(critic.error());
  }
  Optimized optimized(critic->weights(), o.lr, o);
  if (auto r = trainer->add_part({"", &optimized, [&](const fs::path& dir) { return critic->save(dir); }}); !r) {
    return std::unexpected(r.error());
  }
  ValueResult result;
  result.explained_variance_before = critic_explained_variance(*critic, data, o.micro_batch, *device);
  auto run = trainer->run(
      data.size(),
      [&](int64_t, const std::vector<size_t>& which) -> std::expected<Json, std::string> {
        int64_t action_tokens = 0;
        for (size_t i : which) {
          action_tokens += data[i].action_tokens();
        }
        double loss = 0;
        int64_t tokens = 0;
        std::vector<at::Tensor> values, returns, masks;
        for (const auto& part : micro_batches(which, o.micro_batch)) {
          const Batch b = make_batch(data, part, *device);
          const at::Tensor v = critic->values(b);
          const at::Tensor ret = mc_returns(b, v);
          // value_loss's token mean over this micro-batch, weighted to its share of the update's action tokens.
          const double share = static_cast<double>(b.action_tokens) / static_cast<double>(action_tokens);
          const at::Tensor l = value_loss(v, v.detach(), ret, b.mask, 0.0) * share;
          l.backward();
          loss += l.item<double>();
          tokens += b.tokens;
          values.push_back(v.detach().flatten());
          returns.push_back(ret.flatten());
          masks.push_back(b.mask.flatten());
        }
        const at::Tensor v = at::cat(values), ret = at::cat(returns), m = at::cat(masks);
        const Optimized::Update u = optimized.update();
        return Json{{"value_loss", loss},
                    {"explained_variance", explained_variance(v, ret, m)},
                    {"value_mean", masked_mean(v, m).item<double>()},
                    {"return_mean", masked_mean(ret, m).item<double>()},
                    {"grad_norm", u.grad_norm},
                    {"lr", u.lr},
                    {"tokens", tokens},
                    {"action_tokens", action_tokens}};
      },
      on_step);
  if (!run) {
    return std::unexpected(run.error());
  }
  result.run = *run;
  result.explained_variance_after = critic_explained_variance(*critic, data, o.micro_batch, *device);
  return result;
}

}  // namespace ca::train
