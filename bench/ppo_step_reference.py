"""The PyTorch side of bench/ppo_step.sh: one PPO step of ca-train ppo written as a plain transformers + torch
training loop, on the same checkpoint, sequences, batch and dtype.

    ppo_step_reference.py data MODEL OUT.jsonl --batch B --seqlen T [--seed S]
        B synthetic trajectory records (docs/TRAJECTORY.md: messages and reward.value) laid out in ChatML as
        common/train/sequence.cpp lays them out, each exactly T tokens long (the prompt about half of them); also
        OUT.jsonl.ids.json: their token ids, response masks and rewards, which `run` trains on.
    ppo_step_reference.py run MODEL OUT.jsonl.ids.json --steps N --device cpu|cuda --dtype float32|bfloat16
        N PPO steps over those sequences; prints one JSON line per step ({"step", "seconds", "tokens",
        "tokens_per_s"}) and the step's statistics.

A step is what common/train/ppo.cpp's ppo_iteration does with --micro-batch B --minibatches 1 --epochs 1 and no KL:
old log-probabilities and values without gradients, GAE (gamma 1, lambda 0.95 for the actor and 1.0 for the
critic) over the action tokens, advantages whitened, then one update of the actor (clip-higher 0.2/0.28, dual clip
3, token mean) and of the critic (backbone + a bias-free linear head on the last hidden state, value clipping 0.2),
each through gradient clipping at 1.0 and torch.optim.AdamW. bfloat16 is torch.autocast over fp32 weights (what
ca-train --dtype bfloat16 does). Timing: from the step's first tensor to its last update, synchronized.
"""
import argparse
import json
import statistics
import sys
import time

import torch


def chatml(prompt_words, response_words):
    """The segments (text, is_action) of one trajectory, as common/train/sequence.cpp's chatml_segments makes them."""
    return [("<|im_start|>system\nYou write CUDA kernels.<|im_end|>\n<|im_start|>user\n"
             + "Write a kernel for" + " the" * prompt_words + ".<|im_end|>\n<|im_start|>assistant\n", False),
            ("out" + " the" * response_words + "<|im_end|>", True),
            ("\n", False)]


def data(args):
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(f"{args.model}/tokenizer.json")

    def encode(text):
        return tok.encode(text, add_special_tokens=False).ids

    def layout(p, r):
        segs = chatml(p, r)
        ids, mask = [], []
        for text, action in segs:
            piece = encode(text)
            ids += piece
            mask += [1 if action else 0] * len(piece)
        # ca-train refuses a record whose turn-by-turn tokens differ from the whole conversation's.
        assert encode("".join(t for t, _ in segs)) == ids, "turn-by-turn tokenization differs"
        return ids, mask

    base, _ = layout(0, 0)
    if args.seqlen < len(base) + 2:
        sys.exit(f"ppo_step_reference: --seqlen {args.seqlen} is under the {len(base) + 2} tokens of the layout")
    free = args.seqlen - len(base)
    p = free // 2
    ids, mask = layout(p, free - p)
    if len(ids) != args.seqlen:  # " the" is one token in a BPE vocabulary; say so when it is not
        sys.exit(f"ppo_step_reference: the layout gives {len(ids)} tokens, not {args.seqlen}")
    gen = torch.Generator().manual_seed(args.seed)
    rewards = [round(float(x), 3) for x in (torch.rand(args.batch, generator=gen) * 3 - 1)]
    with open(args.out, "w") as f:
        for i, r in enumerate(rewards):
            msgs = [{"role": "system", "content": "You write CUDA kernels."},
                    {"role": "user", "content": "Write a kernel for" + " the" * p + "."},
                    {"role": "assistant", "content": "out" + " the" * (free - p)}]
            f.write(json.dumps({"kind": "trajectory", "id": f"bench#{i}", "task_id": "bench", "sample": i,
                                "messages": msgs, "reward": {"value": r}}) + "\n")
    with open(args.out + ".ids.json", "w") as f:
        json.dump({"ids": [ids] * args.batch, "mask": [mask] * args.batch, "rewards": rewards}, f)
    print(f"{args.out}: {args.batch} trajectories of {len(ids)} tokens ({sum(mask)} action tokens each)",
          file=sys.stderr)


def masked_mean(x, m):
    return (x * m).sum() / m.sum().clamp_min(1.0)


def token_logprobs(logits, ids):
    lp = logits[:, :-1].float().log_softmax(-1)
    out = lp.gather(-1, ids[:, 1:, None]).squeeze(-1)
    return torch.cat([out.new_zeros(ids.shape[0], 1), out], 1), lp


def gae(rewards, values, mask, gamma, lam):
    """GAE over the action tokens of each row, skipping tokens off the mask (the loop of ca-train's gae_pass)."""
    on = mask.bool()
    next_value = values.new_zeros(values.shape[0])
    next_adv = torch.zeros_like(next_value)
    adv = torch.zeros_like(values)
    for t in range(values.shape[1] - 1, -1, -1):
        a = rewards[:, t] + gamma * next_value - values[:, t] + gamma * lam * next_adv
        adv[:, t] = torch.where(on[:, t], a, torch.zeros_like(a))
        next_value = torch.where(on[:, t], values[:, t], next_value)
        next_adv = torch.where(on[:, t], a, next_adv)
    return adv


def run(args):
    from transformers import AutoModel, AutoModelForCausalLM
    torch.manual_seed(0)
    if args.threads:
        torch.set_num_threads(args.threads)
    dev = torch.device(args.device)
    spec = json.load(open(args.ids))
    ids = torch.tensor(spec["ids"], device=dev)
    mask = torch.tensor(spec["mask"], dtype=torch.float32, device=dev)
    attn = torch.ones_like(ids)
    rewards = torch.zeros_like(mask)
    last = (mask * torch.arange(mask.shape[1], device=dev)).argmax(1)
    rewards[torch.arange(ids.shape[0], device=dev), last] = torch.tensor(spec["rewards"], device=dev)
    load = dict(dtype=torch.float32, attn_implementation="sdpa")
    actor = AutoModelForCausalLM.from_pretrained(args.model, **load).to(dev).train()
    backbone = AutoModel.from_pretrained(args.model, **load).to(dev).train()
    head = torch.nn.Linear(backbone.config.hidden_size, 1, bias=False, device=dev)
    torch.nn.init.zeros_(head.weight)  # ca-train's critic from a policy checkpoint starts at V = 0
    critic_params = list(backbone.parameters()) + list(head.parameters())
    actor_opt = torch.optim.AdamW(actor.parameters(), lr=1e-5, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0)
    critic_opt = torch.optim.AdamW(critic_params, lr=1e-5, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0)
    amp = (torch.autocast(dev.type, dtype=torch.bfloat16) if args.dtype == "bfloat16"
           else torch.autocast(dev.type, enabled=False))

    def values_of():
        h = backbone(input_ids=ids, attention_mask=attn).last_hidden_state
        v = head(h[:, :-1]).squeeze(-1).float()
        return torch.cat([v.new_zeros(v.shape[0], 1), v], 1)

    def sync():
        if dev.type == "cuda":
            torch.cuda.synchronize()

    eps_low, eps_high, dual, vclip = 0.2, 0.28, 3.0, 0.2
    for step in range(1, args.steps + 1):
        sync()
        t0 = time.perf_counter()
        with torch.no_grad(), amp:
            old_lp, _ = token_logprobs(actor(input_ids=ids, attention_mask=attn).logits, ids)
            old_v = values_of()
        adv = gae(rewards, old_v, mask, 1.0, 0.95)
        ret = (gae(rewards, old_v, mask, 1.0, 1.0) + old_v) * mask
        mean = masked_mean(adv, mask)
        adv = (adv - mean) * torch.rsqrt(masked_mean((adv - mean).square(), mask) + 1e-8) * mask
        with amp:
            logits = actor(input_ids=ids, attention_mask=attn).logits
        lp, full = token_logprobs(logits, ids)
        ratio = torch.exp(lp - old_lp)
        unclipped = -adv * ratio
        clipped = -adv * ratio.clamp(1 - eps_low, 1 + eps_high)
        loss = torch.maximum(unclipped, clipped)
        loss = torch.where(adv < 0, torch.minimum(loss, -dual * adv), loss)
        policy_loss = masked_mean(loss, mask)
        policy_loss.backward()
        with torch.no_grad():
            ent = torch.cat([mask.new_zeros(mask.shape[0], 1), -(full.exp() * full).sum(-1)], 1)
            stats = torch.stack([policy_loss.detach(), masked_mean((clipped > unclipped).float(), mask),
                                 masked_mean(ratio, mask), masked_mean(ent, mask)])
        with amp:
            v = values_of()
        vc = old_v + (v - old_v).clamp(-vclip, vclip)
        value_loss = 0.5 * masked_mean(torch.maximum((v - ret).square(), (vc - ret).square()), mask)
        value_loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(actor.parameters(), 1.0)
        actor_opt.step()
        actor_opt.zero_grad(set_to_none=False)
        torch.nn.utils.clip_grad_norm_(critic_params, 1.0)
        critic_opt.step()
        critic_opt.zero_grad(set_to_none=False)
        values = torch.cat([stats, value_loss.detach()[None], grad_norm[None].float()]).tolist()  # one sync
        sync()
        seconds = time.perf_counter() - t0
        tokens = ids.numel()
        print(json.dumps({"step": step, "seconds": seconds, "tokens": tokens, "tokens_per_s": tokens / seconds,
                          "policy_loss": values[0], "clip_fraction": values[1], "ratio_mean": values[2],
                          "entropy": values[3], "value_loss": values[4], "grad_norm": values[5]}), flush=True)


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("data")
    d.add_argument("model")
    d.add_argument("out")
    d.add_argument("--batch", type=int, required=True)
    d.add_argument("--seqlen", type=int, required=True)
    d.add_argument("--seed", type=int, default=0)
    r = sub.add_parser("run")
    r.add_argument("model")
    r.add_argument("ids")
    r.add_argument("--steps", type=int, default=6)
    r.add_argument("--device", default="cpu")
    r.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    r.add_argument("--threads", type=int, default=0)
    args = p.parse_args()
    {"data": data, "run": run}[args.cmd](args)


if __name__ == "__main__":
    main()
