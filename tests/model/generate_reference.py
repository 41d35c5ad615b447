"""transformers' generate() as the reference for the C++ generator: greedy tokens and their logprobs, and its
speed (tests/cli/model_generate.sh, bench/model_generate.sh).

    generate_reference.py expect MODEL CASE [--max-tokens N]
        CASE/prompts.json (token ids of a batch of prompts of different lengths, chat-formatted) and
        CASE/expected.json ({"ids", "logprobs"}: greedy, no eos stop, left padding, logprobs of the raw logits)
    generate_reference.py bench MODEL --batch B --max-tokens N [--threads T]
        one JSON line: transformers' greedy generate on the same prompts, tokens/s over the batch
    generate_reference.py prompts MODEL --batch B
        the same prompts as JSONL records {"ids": [...]} on stdout (ca-model generate's input)
"""
import argparse
import json
import os
import time

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

QUESTIONS = [
    "Write a CUDA kernel that adds two vectors.",
    "What is shared memory?",
    "Explain in one sentence why coalesced loads are faster than scattered ones on a GPU.",
    "hi",
    "List three ways to make a softmax kernel faster.",
    "Call the verify tool.",
    "Fuse a matmul with a ReLU.",
    "What does __syncthreads() do, and when is it needed inside a reduction?",
]


def prompts(tok, n):
    out = []
    for q in (QUESTIONS * ((n + len(QUESTIONS) - 1) // len(QUESTIONS)))[:n]:
        text = f"<|im_start|>user\n{q}<|im_end|>\n<|im_start|>assistant\n"
        out.append(tok(text, add_special_tokens=False)["input_ids"])
    return out


def padded(rows, pad):
    n = max(len(r) for r in rows)
    ids = torch.tensor([[pad] * (n - len(r)) + r for r in rows])
    mask = torch.tensor([[0] * (n - len(r)) + [1] * len(r) for r in rows])
    return ids, mask


def run(model, rows, max_tokens, pad):
    ids, mask = padded(rows, pad)
    ids, mask = ids.to(model.device), mask.to(model.device)
    with torch.no_grad():
        return model.generate(input_ids=ids, attention_mask=mask, do_sample=False, max_new_tokens=max_tokens,
                              min_new_tokens=max_tokens, eos_token_id=None, pad_token_id=pad,
                              output_logits=True, return_dict_in_generate=True), ids.shape[1]


def load(path):
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    model.generation_config.eos_token_id = None
    return model, AutoTokenizer.from_pretrained(path)


def expect(args):
    model, tok = load(args.model)
    rows = prompts(tok, 5)
    out, width = run(model, rows, args.max_tokens, 0)
    new = out.sequences[:, width:]
    logprobs = torch.stack(out.logits, 1).float().log_softmax(-1).gather(-1, new.unsqueeze(-1)).squeeze(-1)
    os.makedirs(args.case, exist_ok=True)
    json.dump(rows, open(os.path.join(args.case, "prompts.json"), "w"))
    json.dump({"ids": new.tolist(), "logprobs": logprobs.tolist()}, open(os.path.join(args.case, "expected.json"), "w"))
    print(f"{args.case}: {len(rows)} prompts, {args.max_tokens} tokens each")


def bench(args):
    if args.threads:
        torch.set_num_threads(args.threads)
    model, tok = load(args.model)
    model = model.to(args.device)
    rows = prompts(tok, args.batch)
    run(model, rows, 2, 0)  # warm-up
    sync = torch.cuda.synchronize if args.device == "cuda" else (lambda: None)
    sync()
    start = time.perf_counter()
    run(model, rows, args.max_tokens, 0)
    sync()
    seconds = time.perf_counter() - start
    print(json.dumps({"impl": "transformers", "batch": args.batch, "tokens": args.batch * args.max_tokens,
                      "seconds": round(seconds, 3), "tokens_per_s": round(args.batch * args.max_tokens / seconds, 2)}))


def dump_prompts(args):
    for row in prompts(AutoTokenizer.from_pretrained(args.model), args.batch):
        print(json.dumps({"ids": row}))


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("expect")
    e.add_argument("model")
    e.add_argument("case")
    e.add_argument("--max-tokens", type=int, default=24)
    b = sub.add_parser("bench")
    b.add_argument("model")
    b.add_argument("--batch", type=int, default=4)
    b.add_argument("--max-tokens", type=int, default=64)
    b.add_argument("--threads", type=int, default=0)
    b.add_argument("--device", default="cpu")
    d = sub.add_parser("prompts")
    d.add_argument("model")
    d.add_argument("--batch", type=int, default=4)
    args = p.parse_args()
    {"expect": expect, "bench": bench, "prompts": dump_prompts}[args.cmd](args)


if __name__ == "__main__":
    main()
