// PPO iterations and the ppo/warmup stages.
#include "train/ppo.h"

#include <ATen/core/grad_mode.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>
#include <set>

namespace ca::train {

namespace fs = std::filesystem;

Json reward_stats(const std::vector<double>& rewards) {
  double sum = 0;
  int64_t passed = 0;
  std::map<double, int64_t> counts;
  for (double r : rewards) {
    sum += r;
    passed += r > 0 ? 1 : 0;
    ++counts[r];
  }
  const double n = static_cast<double>(std::max<size_t>(1, rewards.size()));
  Json histogram = Json::object();
  auto label = [](double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", x);
    return std::string(buf);
  };
  if (counts.size() <= 16) {
    for (const auto& [value, count] : counts) {
      histogram[label(value)] = count;
    }
  } else {
    const double lo = counts.begin()->first, hi = counts.rbegin()->first, width = (hi - lo) / 10;
    std::vector<int64_t> bins(10, 0);
    for (double r : rewards) {
      ++bins[static_cast<size_t>(std::min(9.0, std::floor((r - lo) / width)))];
    }
    for (size_t k = 0; k < bins.size(); ++k) {
      histogram[label(lo + width * static_cast<double>(k)) + ".." + label(lo + width * static_cast<double>(k + 1))] =
          bins[k];
    }
  }
  return Json{
      {"reward_mean", sum / n}, {"pass_rate", static_cast<double>(passed) / n}, {"reward_histogram", histogram}};
}

namespace {

// Per-sequence rows [length] of the iteration's fixed tensors, padded back into [rows, length] on demand.
struct Rows {
  std::vector<at::Tensor> rows;
  at::Tensor pad(const std::vector<size_t>& pick, int64_t length) const {
    at::Tensor out = at::zeros({static_cast<int64_t>(pick.size()), length}, rows[pick[0]].options());
    for (size_t r = 0; r < pick.size(); ++r) {
      out[static_cast<int64_t>(r)].narrow(0, 0, rows[pick[r]].size(0)).copy_(rows[pick[r]]);
    }
    return out;
  }
  void add(const at::Tensor& batch, const std::vector<size_t>& pick, const std::vector<Sequence>& data,
           const std::vector<size_t>& which) {
    for (size_t r = 0; r < pick.size(); ++r) {
      rows[pick[r]] =
          batch[static_cast<int64_t>(r)].narrow(0, 0, static_cast<int64_t>(data[which[pick[r]]].ids.size()));
    }
  }
};

}  // namespace

std::expected<Json, std::string> ppo_iteration(const PpoModels& m, const std::vector<Sequence>& data,
                                               const std::vector<size_t>& which, const PpoConfig& c, uint64_t seed,
                                               at::Device device, const DataParallel* dp) {
  dp = dp != nullptr && dp->active() ? dp : nullptr;
  const int rank = dp != nullptr ? dp->rank() : 0, world = dp != nullptr ? dp->world_size() : 1;
  if (which.empty()) {
    return std::unexpected("no sequences in the iteration");
  }
  const size_t n = which.size();
  std::vector<size_t> all(n);
  for (size_t r = 0; r < n; ++r) {
    all[r] = r;
  }
  auto batch_of = [&](const std::vector<size_t>& rows) {
    std::vector<size_t> idx;
    for (size_t r : rows) {
      idx.push_back(which[r]);
    }
    return make_batch(data, idx, device);
  };
  // 1. Old log-probabilities, old values and the reference's log-probabilities, without gradients.
  Rows old_lp{std::vector<at::Tensor>(n)}, old_v{std::vector<at::Tensor>(n)}, ref_lp{std::vector<at::Tensor>(n)};
  Rows adv{std::vector<at::Tensor>(n)}, ret{std::vector<at::Tensor>(n)};
  int64_t tokens = 0, action_tokens = 0;
  for (size_t i : which) {
    tokens += static_cast<int64_t>(data[i].ids.size());
    action_tokens += data[i].action_tokens();
  }
  {
    at::NoGradGuard no_grad;
    // Each rank's share of the forward passes; the rows are then summed into every rank (below).
    for (const auto& part : micro_batches(shard_indices(all, rank, world), c.micro_batch)) {
      const Batch b = batch_of(part);
      old_lp.add(token_logprobs(m.actor->forward(b.ids, b.positions, b.key_mask), b.ids), part, data, which);
      if (m.reference != nullptr && c.kl_coef > 0) {
        ref_lp.add(token_logprobs(m.reference->forward(b.ids, b.positions, b.key_mask), b.ids), part, data, which);
      }
      if (!c.group_advantages) {
        const at::Tensor v = m.critic->values(b);
        const Gae g = gae(b.rewards, v, b.mask, c.gae);
        old_v.add(v, part, data, which);
        adv.add(g.advantages, part, data, which);
        ret.add(g.returns, part, data, which);
      }
    }
  }
  if (dp != nullptr) {
    // Every rank needs every sequence's rows (the minibatches below mix the ranks' shares, and whitening and
    // explained variance are over the whole iteration): each quantity flattened over all sequences, zeros where
    // another rank computed, summed over ranks.
    std::vector<Rows*> quantities = {&old_lp};
    if (m.reference != nullptr && c.kl_coef > 0) {
      quantities.push_back(&ref_lp);
    }
    if (!c.group_advantages) {
      quantities.insert(quantities.end(), {&old_v, &adv, &ret});
    }
    std::vector<int64_t> offset(n + 1, 0);
    for (size_t r = 0; r < n; ++r) {
      offset[r + 1] = offset[r] + static_cast<int64_t>(data[which[r]].ids.size());
    }
    std::vector<at::Tensor> flats;
    for (Rows* q : quantities) {
      at::Tensor flat = at::zeros({offset[n]}, at::TensorOptions().dtype(at::kFloat).device(device));
      for (size_t r = 0; r < n; ++r) {
        if (q->rows[r].defined()) {
          flat.narrow(0, offset[r], offset[r + 1] - offset[r]).copy_(q->rows[r]);
        }
      }
      flats.push_back(flat);
    }
    if (auto summed = dp->sum_tensors(flats); !summed) {
      return std::unexpected(summed.error());
    }
    for (size_t k = 0; k < quantities.size(); ++k) {
      for (size_t r = 0; r < n; ++r) {
        quantities[k]->rows[r] = flats[k].narrow(0, offset[r], offset[r + 1] - offset[r]);
      }
    }
  }
  // 2. Advantages over the whole iteration.
  int64_t length = 0;
  for (size_t i : which) {
    length = std::max<int64_t>(length, static_cast<int64_t>(data[i].ids.size()));
  }
  const Batch whole_mask = batch_of(all);  // ids, mask and rewards of every sequence (no forward pass)
  std::vector<double> rewards;
  for (size_t i : which) {
    rewards.push_back(data[i].reward);
  }
  Json out = reward_stats(rewards);
  if (c.group_advantages) {
    std::map<std::string, std::vector<size_t>> groups;
    for (size_t r = 0; r < n; ++r) {
      groups[data[which[r]].task_id].push_back(r);
    }
    for (const auto& [task, rows] : groups) {
      std::vector<double> rs;
      for (size_t r : rows) {
        rs.push_back(data[which[r]].reward);
      }
      const at::Tensor a = group_advantages(at::tensor(rs, at::kDouble).view({1, -1})).view({-1});
      for (size_t k = 0; k < rows.size(); ++k) {
        adv.rows[rows[k]] = whole_mask.mask[static_cast<int64_t>(rows[k])].narrow(
                                0, 0, static_cast<int64_t>(data[which[rows[k]]].ids.size())) *
                            a[static_cast<int64_t>(k)].item<double>();
      }
    }
    out["advantage_mean"] = masked_mean(adv.pad(all, length), whole_mask.mask).item<double>();
    out["groups"] = groups.size();
  } else {
    const at::Tensor a = adv.pad(all, length);
    out["advantage_mean"] = masked_mean(a, whole_mask.mask).item<double>();
    out["explained_variance"] = explained_variance(old_v.pad(all, length), ret.pad(all, length), whole_mask.mask);
    out["value_mean"] = masked_mean(old_v.pad(all, length), whole_mask.mask).item<double>();
    adv.add(whiten(a, whole_mask.mask), all, data, which);
  }
  // 3. Epochs of minibatch updates.
  const int64_t parts = std::clamp<int64_t>(c.minibatches, 1, static_cast<int64_t>(n));
  double policy_loss = 0, value_loss_sum = 0, kl = 0, entropy = 0, clip_fraction = 0, ratio = 0;
  double grad_norm = 0, critic_grad_norm = 0, lr = 0;
  int64_t updates = 0;
  for (int64_t epoch = 0; epoch < c.epochs; ++epoch) {
    std::vector<size_t> order = all;
    std::mt19937_64 rng(seed * 1000003ULL + static_cast<uint64_t>(epoch));
    std::shuffle(order.begin(), order.end(), rng);
    for (int64_t p = 0; p < parts; ++p) {
      const std::vector<size_t> minibatch(
          order.begin() + static_cast<std::ptrdiff_t>(p * static_cast<int64_t>(n) / parts),
          order.begin() + static_cast<std::ptrdiff_t>((p + 1) * static_cast<int64_t>(n) / parts));
      int64_t mb_tokens = 0;
      for (size_t r : minibatch) {
        mb_tokens += data[which[r]].action_tokens();
      }
      // This rank's share of the minibatch; mb_tokens is the whole minibatch's, so the shares' sum is its mean.
      for (const auto& part : micro_batches(shard_indices(minibatch, rank, world), c.micro_batch)) {
        const Batch b = batch_of(part);
        const int64_t len = b.ids.size(1);
        const double share = static_cast<double>(b.action_tokens) / static_cast<double>(mb_tokens);
        const at::Tensor logits = m.actor->forward(b.ids, b.positions, b.key_mask);
        const at::Tensor lp = token_logprobs(logits, b.ids);
        const PpoLoss pl = ppo_policy_loss(lp, old_lp.pad(part, len), adv.pad(part, len), b.mask, c.clip);
        at::Tensor loss = pl.loss;
        if (m.reference != nullptr && c.kl_coef > 0) {
          const at::Tensor k3 = masked_mean(kl_k3(lp, ref_lp.pad(part, len)), b.mask);
          loss = loss + c.kl_coef * k3;
          kl += k3.item<double>() * share;
        }
        (loss * share).backward();
        policy_loss += pl.loss.item<double>() * share;
        clip_fraction += pl.clip_fraction.item<double>() * share;
        ratio += pl.ratio_mean.item<double>() * share;
        entropy += masked_mean(token_entropy(logits.detach()), b.mask).item<double>() * share;
        if (!c.group_advantages) {
          const at::Tensor vl =
              value_loss(m.critic->values(b), old_v.pad(part, len), ret.pad(part, len), b.mask, c.value_clip);
          (vl * share).backward();
          value_loss_sum += vl.item<double>() * share;
        }
      }
      auto u = m.actor_optimized->update();
      if (!u) {
        return std::unexpected(u.error());
      }
      grad_norm += u->grad_norm;
      lr = u->lr;
      if (!c.group_advantages) {
        auto cu = m.critic_optimized->update();
        if (!cu) {
          return std::unexpected(cu.error());
        }
        critic_grad_norm += cu->grad_norm;
      }
      ++updates;
    }
  }
  if (dp != nullptr) {  // the ranks' shares of each token mean add up to the minibatch's
    auto total = dp->sum({policy_loss, value_loss_sum, kl, entropy, clip_fraction, ratio});
    if (!total) {
      return std::unexpected(total.error());
    }
    policy_loss = (*total)[0], value_loss_sum = (*total)[1], kl = (*total)[2];
    entropy = (*total)[3], clip_fraction = (*total)[4], ratio = (*total)[5];
  }
  const double k = static_cast<double>(updates);
  out["policy_loss"] = policy_loss / k;
  out["kl"] = kl / k;
  out["entropy"] = entropy / k;
  out["clip_fraction"] = clip_fraction / k;
  out["ratio_mean"] = ratio / k;
  out["grad_norm"] = grad_norm / k;
  out["lr"] = lr;
  out["updates"] = updates;
  out["tokens"] = tokens;
  out["action_tokens"] = action_tokens;
  if (!c.group_advantages) {
    out["value_loss"] = value_loss_sum / k;
    out["critic_grad_norm"] = critic_grad_norm / k;
  }
  return out;
}

std::expected<TrainResult, std::string> train_ppo(const TrainOptions& o, const PpoRunOptions& ppo,
                                                  const std::vector<Sequence>& data,
                                                  const std::function<void(const Json&)>& on_step) {
  if (data.empty()) {
    return std::unexpected("no training sequences");
  }
  const PpoConfig& c = ppo.config;
  auto device = parse_device(o.device);
  if (!device) {
    return std::unexpected(device.error());
  }
  // Warm-up draws tasks, not sequences: each step takes all samples of options.batch tasks.
  std::vector<std::vector<size_t>> units;
  if (c.group_advantages) {
    std::map<std::string, size_t> unit_of;
    for (size_t i = 0; i < data.size(); ++i) {
      auto [it, added] = unit_of.try_emplace(data[i].task_id, units.size());
      if (added) {
        units.emplace_back();
      }
      units[it->second].push_back(i);
    }
  } else {
    for (size_t i = 0; i < data.size(); ++i) {
      units.push_back({i});
    }
  }
  Json identity = run_identity(o, data.size());
  identity["stage"] = c.group_advantages ? "warmup" : "ppo";
  identity["critic_lr"] = ppo.critic_lr;
  identity["eps_low"] = c.clip.eps_low;
  identity["eps_high"] = c.clip.eps_high;
  identity["dual_clip"] = c.clip.dual_clip;
  identity["gamma"] = c.gae.gamma;
  identity["lambda_actor"] = c.gae.lambda_actor;
  identity["lambda_critic"] = c.gae.lambda_critic;
  identity["value_clip"] = c.value_clip;
  identity["kl_coef"] = c.kl_coef;
  identity["epochs"] = c.epochs;
  identity["minibatches"] = c.minibatches;
  std::optional<Trainer> trainer;
  std::optional<model::Transformer> actor, reference;
  std::optional<Optimized> actor_optimized, critic_optimized;
  std::optional<Critic> critic;
  auto setup = [&]() -> std::expected<void, std::string> {
    auto opened = Trainer::open(o, identity);
    if (!opened) {
      return std::unexpected(opened.error());
    }
    trainer.emplace(std::move(*opened));
    const std::optional<fs::path>& resumed = trainer->resumed_from();
    auto loaded_actor = model::Transformer::load(resumed.value_or(o.model), *device, at::kFloat);
    if (!loaded_actor) {
      return std::unexpected(loaded_actor.error());
    }
    actor.emplace(std::move(*loaded_actor));
    actor_optimized.emplace(actor->weights(), o.lr, o);
    if (auto r = trainer->add_part({"", &*actor_optimized, [&](const fs::path& d) { return actor->save(d); }}); !r) {
      return r;
    }
    if (!c.group_advantages) {
      auto loaded = Critic::load(resumed ? *resumed / "critic" : ppo.critic, *device);
      if (!loaded) {
        return std::unexpected(loaded.error());
      }
      critic.emplace(std::move(*loaded));
      critic_optimized.emplace(critic->weights(), ppo.critic_lr, o);
      if (auto r =
              trainer->add_part({"critic", &*critic_optimized, [&](const fs::path& d) { return critic->save(d); }});
          !r) {
        return r;
      }
    }
    if (c.kl_coef > 0) {
      auto loaded = model::Transformer::load(ppo.reference.empty() ? o.model : ppo.reference, *device, at::kFloat);
      if (!loaded) {
        return std::unexpected(loaded.error());
      }
      reference.emplace(std::move(*loaded));
    }
    return {};
  };
  if (auto r = agree(o.dp, setup()); !r) {
    return std::unexpected(r.error());
  }
  const PpoModels models{&*actor, &*actor_optimized, critic ? &*critic : nullptr,
                         critic_optimized ? &*critic_optimized : nullptr, reference ? &*reference : nullptr};
  return trainer->run(
      units.size(),
      [&](int64_t step, const std::vector<size_t>& picked) {
        std::vector<size_t> which;
        for (size_t u : picked) {
          which.insert(which.end(), units[u].begin(), units[u].end());
        }
        return ppo_iteration(models, data, which, c, o.seed * 7919ULL + static_cast<uint64_t>(step), *device, o.dp);
      },
      on_step);
}

}  // namespace ca::train
