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

std::expected<double, std::string> critic_explained_variance(const Critic& critic, const std::vector<Sequence>& data,
                                                             const TrainOptions& o, at::Device device) {
  at::NoGradGuard no_grad;
  std::vector<size_t> all(data.size());
  for (size_t i = 0; i < all.size(); ++i) {
    all[i] = i;
  }
  VarianceSums sums;
  for (const auto& part : micro_batches(my_share(o, all), o.micro_batch)) {
    const Batch b = make_batch(data, part, device);
    const at::Tensor v = critic.values(b);
    sums.add(v, mc_returns(b, v), b.mask);
  }
  if (o.dp != nullptr) {
    auto total = o.dp->sum(sums.sums);
    if (!total) {
      return std::unexpected(total.error());
    }
    sums.sums = *total;
  }
  return sums.explained_variance();
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
  std::optional<Trainer> trainer;
  std::optional<Critic> critic;
  std::optional<Optimized> optimized;
  auto setup = [&]() -> std::expected<void, std::string> {
    auto opened = Trainer::open(o, identity);
    if (!opened) {
      return std::unexpected(opened.error());
    }
    trainer.emplace(std::move(*opened));
    auto loaded = Critic::load(trainer->resumed_from().value_or(o.model), *device);
    if (!loaded) {
      return std::unexpected(loaded.error());
    }
    critic.emplace(std::move(*loaded));
    optimized.emplace(critic->weights(), o.lr, o);
    return trainer->add_part({"", &*optimized, [&](const fs::path& dir) { return critic->save(dir); }});
  };
  if (auto r = agree(o.dp, setup()); !r) {
    return std::unexpected(r.error());
  }
  ValueResult result;
  if (o.dp != nullptr) {  // the ranks' critics are rank 0's before the first measurement
    if (auto r = o.dp->broadcast_parameters(critic->weights()); !r) {
      return std::unexpected(r.error());
    }
  }
  auto before = critic_explained_variance(*critic, data, o, *device);
  if (!before) {
    return std::unexpected(before.error());
  }
  result.explained_variance_before = *before;
  auto run = trainer->run(
      data.size(),
      [&](int64_t, const std::vector<size_t>& which) -> std::expected<Json, std::string> {
        int64_t action_tokens = 0;  // the whole update's (the indices are global)
        for (size_t i : which) {
          action_tokens += data[i].action_tokens();
        }
        double loss = 0;
        int64_t tokens = 0;
        VarianceSums sums;
        for (const auto& part : micro_batches(my_share(o, which), o.micro_batch)) {
          const Batch b = make_batch(data, part, *device);
          const at::Tensor v = critic->values(b);
          const at::Tensor ret = mc_returns(b, v);
          // value_loss's token mean over this micro-batch, weighted to its share of the update's action tokens.
          const double share = static_cast<double>(b.action_tokens) / static_cast<double>(action_tokens);
          const at::Tensor l = value_loss(v, v.detach(), ret, b.mask, 0.0) * share;
          l.backward();
          loss += l.item<double>();
          tokens += b.tokens;
          sums.add(v, ret, b.mask);
        }
        auto u = optimized->update();
        if (!u) {
          return std::unexpected(u.error());
        }
        if (o.dp != nullptr) {
          std::vector<double> mine = sums.sums;
          mine.push_back(loss);
          mine.push_back(static_cast<double>(tokens));
          auto total = o.dp->sum(mine);
          if (!total) {
            return std::unexpected(total.error());
          }
          sums.sums.assign(total->begin(), total->begin() + static_cast<std::ptrdiff_t>(sums.sums.size()));
          loss = (*total)[sums.sums.size()];
          tokens = static_cast<int64_t>((*total)[sums.sums.size() + 1]);
        }
        return Json{{"value_loss", loss},
                    {"explained_variance", sums.explained_variance()},
                    {"value_mean", sums.value_mean()},
                    {"return_mean", sums.return_mean()},
                    {"grad_norm", u->grad_norm},
                    {"lr", u->lr},
                    {"tokens", tokens},
                    {"action_tokens", action_tokens}};
      },
      on_step);
  if (!run) {
    return std::unexpected(run.error());
  }
  result.run = *run;
  auto after = critic_explained_variance(*critic, data, o, *device);
  if (!after) {
    return std::unexpected(after.error());
  }
  result.explained_variance_after = *after;
  return result;
}

}  // namespace ca::train
