"""PyTorch reference for common/train/losses.cpp (run by common/train/losses_test.cpp).

    reference.py IN.json OUT.json

IN holds tensors as {"name": {"shape": [...], "data": [...]}} (float64; ids and masks as numbers). OUT gets the
same layout for every quantity the C++ side computes. The implementations here are written independently of the
C++ ones: GAE walks each row's list of action tokens, the PPO loss follows the paper's case split.
"""
import json
import sys

import torch


def load(path):
    with open(path) as f:
        raw = json.load(f)
    return {k: torch.tensor(v["data"], dtype=torch.float64).reshape(v["shape"]) for k, v in raw.items()}


def token_mean(x, mask):
    return (x * mask).sum() / mask.sum().clamp_min(1)


def gae_row(rewards, values, gamma, lam):
    """Advantages over one row's action tokens (lists, in order)."""
    adv = [0.0] * len(rewards)
    running = 0.0
    for i in reversed(range(len(rewards))):
        next_v = values[i + 1] if i + 1 < len(rewards) else 0.0
        delta = rewards[i] + gamma * next_v - values[i]
        running = delta + gamma * lam * running
        adv[i] = running
    return adv


def gae(rewards, values, mask, gamma, lam_actor, lam_critic):
    adv = torch.zeros_like(values)
    ret = torch.zeros_like(values)
    for b in range(values.shape[0]):
        idx = mask[b].nonzero().flatten().tolist()
        r = [rewards[b, i].item() for i in idx]
        v = [values[b, i].item() for i in idx]
        a_actor = gae_row(r, v, gamma, lam_actor)
        a_critic = gae_row(r, v, gamma, lam_critic)
        for j, i in enumerate(idx):
            adv[b, i] = a_actor[j]
            ret[b, i] = a_critic[j] + v[j]
    return adv, ret


def ppo(lp, old, adv, mask, eps_low=0.2, eps_high=0.28, c=3.0):
    ratio = torch.exp(lp - old)
    surr1 = ratio * adv
    surr2 = torch.clamp(ratio, 1 - eps_low, 1 + eps_high) * adv
    clipped_obj = torch.min(surr1, surr2)          # the PPO objective
    dual_obj = torch.max(clipped_obj, c * adv)     # dual clip bounds it from below for A < 0
    obj = torch.where(adv < 0, dual_obj, clipped_obj)
    clip_frac = token_mean((surr2 < surr1).double(), mask)
    return token_mean(-obj, mask), clip_frac


def main():
    t = load(sys.argv[1])
    logits, ids, mask = t["logits"], t["ids"].long(), t["mask"]
    logp_all = torch.log_softmax(logits, dim=-1)
    lp = torch.zeros(ids.shape, dtype=torch.float64)
    ent = torch.zeros(ids.shape, dtype=torch.float64)
    for b in range(ids.shape[0]):
        for i in range(1, ids.shape[1]):
            lp[b, i] = logp_all[b, i - 1, ids[b, i]]
            ent[b, i] = -(logp_all[b, i - 1].exp() * logp_all[b, i - 1]).sum()
    adv, ret = gae(t["rewards"], t["values"], mask, 1.0, 0.95, 1.0)
    mean = token_mean(adv, mask)
    var = token_mean((adv - mean) ** 2, mask)
    white = (adv - mean) / torch.sqrt(var + 1e-8) * mask
    g = t["group_rewards"]
    group = (g - g.mean(1, keepdim=True)) / (g.std(1, keepdim=True) + 1e-6)
    pl, clip_frac = ppo(t["new_logprobs"], t["old_logprobs"], white, mask)
    v, vo = t["new_values"], t["values"]
    vc = torch.clamp(v, vo - 0.2, vo + 0.2)
    vl = 0.5 * token_mean(torch.max((v - ret) ** 2, (vc - ret) ** 2), mask)
    ref = t["ref_logprobs"]
    kl = ref.exp() / t["new_logprobs"].exp() - (ref - t["new_logprobs"]) - 1
    resid = (ret - v)[mask.bool()]
    ev = 1 - resid.var(unbiased=False) / ret[mask.bool()].var(unbiased=False)
    out = {"token_logprobs": lp, "token_entropy": ent, "nll": -token_mean(lp, mask), "advantages": adv,
           "returns": ret, "whitened": white, "group_advantages": group, "ppo_loss": pl, "clip_fraction": clip_frac,
           "value_loss": vl, "kl_k3": kl, "explained_variance": ev}
    with open(sys.argv[2], "w") as f:
        json.dump({k: {"shape": list(x.shape), "data": x.flatten().tolist()} for k, x in out.items()}, f)


if __name__ == "__main__":
    main()
