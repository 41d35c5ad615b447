"""Reference logits from Hugging Face transformers for the C++ transformer (tests/cli/model_logits.sh).

    model_reference.py tiny OUT --arch llama|qwen2|qwen3 --tokenizer DIR [--shard]
        a small random model of that family (with DIR's tokenizer files), saved by save_pretrained
    model_reference.py expect MODEL CASE
        CASE/inputs.json (a left-padded batch of prompts of different lengths: ids, mask, positions) and
        CASE/logits.safetensors ("float32" and "bfloat16": transformers' logits for them, model in that dtype)
    model_reference.py check MODEL CASE
        loads MODEL (a checkpoint the C++ side saved) in transformers and compares its float32 logits with
        CASE/logits.safetensors on the unpadded positions; exit 1 when max abs diff > 1e-4 or an argmax differs
"""
import argparse
import json
import os
import shutil
import sys

import torch
from safetensors.torch import load_file, save_file
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

PROMPTS = [
    "__global__ void relu(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] = fmaxf(x[i], 0.f); }",
    "<|im_start|>user\nWrite a fast softmax kernel.<|im_end|>\n<|im_start|>assistant\n",
    "Naïve café 日本語 😀 1234",
]


def tiny(args):
    torch.manual_seed({"llama": 1, "qwen2": 2, "qwen3": 3}[args.arch])
    tok = AutoTokenizer.from_pretrained(args.tokenizer)
    common = dict(vocab_size=len(tok), hidden_size=64, intermediate_size=176, num_hidden_layers=3,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512, rms_norm_eps=1e-5)
    if args.arch == "llama":  # SmolLM2's padding token is <|im_end|>, which every turn ends with
        cfg = AutoConfig.for_model("llama", tie_word_embeddings=True,
                                   pad_token_id=tok.convert_tokens_to_ids("<|im_end|>"),
                                   rope_parameters={"rope_type": "llama3", "rope_theta": 50000.0, "factor": 8.0,
                                                    "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                                    "original_max_position_embeddings": 64}, **common)
    elif args.arch == "qwen2":
        cfg = AutoConfig.for_model("qwen2", tie_word_embeddings=False, rope_theta=1000000.0, **common)
    else:
        cfg = AutoConfig.for_model("qwen3", tie_word_embeddings=True, head_dim=32, **common)
    model = AutoModelForCausalLM.from_config(cfg, dtype=torch.float32)
    with torch.no_grad():  # random biases and norms, so that a wrong reading of them shows
        for name, p in model.named_parameters():
            if name.endswith("bias") or "norm" in name:
                p.normal_(1.0 if "norm" in name else 0.0, 0.1)
    kw = {"max_shard_size": "2MB"} if args.shard else {}
    model.save_pretrained(args.out, **kw)
    tok.save_pretrained(args.out)
    print(f"{args.out}: {args.arch}, {sum(p.numel() for p in model.parameters())} parameters")


def batch(tok):
    rows = [tok(p, add_special_tokens=False)["input_ids"] for p in PROMPTS]
    n = max(len(r) for r in rows)
    ids = [[0] * (n - len(r)) + r for r in rows]
    mask = [[0] * (n - len(r)) + [1] * len(r) for r in rows]
    pos = [[max(0, k - (n - len(r))) for k in range(n)] for r in rows]
    return ids, mask, pos


def logits(model_dir, dtype, ids, mask, pos, device="cpu"):
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=dtype).to(device).eval()
    with torch.no_grad():
        out = model(input_ids=torch.tensor(ids, device=device), attention_mask=torch.tensor(mask, device=device),
                    position_ids=torch.tensor(pos, device=device))
    return out.logits.float().cpu()


def expect(args):
    os.makedirs(args.case, exist_ok=True)
    ids, mask, pos = batch(AutoTokenizer.from_pretrained(args.model))
    with open(os.path.join(args.case, "inputs.json"), "w") as f:
        json.dump({"ids": ids, "mask": mask, "positions": pos}, f)
    save_file({"float32": logits(args.model, torch.float32, ids, mask, pos, args.device).contiguous(),
               "bfloat16": logits(args.model, torch.bfloat16, ids, mask, pos, args.device).contiguous()},
              os.path.join(args.case, "logits.safetensors"))
    print(f"{args.case}: batch {len(ids)} x {len(ids[0])}")


def check(args):
    inputs = json.load(open(os.path.join(args.case, "inputs.json")))
    want = load_file(os.path.join(args.case, "logits.safetensors"))["float32"]
    got = logits(args.model, torch.float32, inputs["ids"], inputs["mask"], inputs["positions"])
    keep = torch.tensor(inputs["mask"]).bool()
    diff = (got - want).abs()[keep].max().item()
    same = bool((got.argmax(-1) == want.argmax(-1))[keep].all())
    print(f"{args.model}: transformers' logits of the saved checkpoint: max abs diff {diff:.3g}, argmax equal: {same}")
    sys.exit(0 if diff <= 1e-4 and same else 1)


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("tiny")
    t.add_argument("out")
    t.add_argument("--arch", required=True, choices=["llama", "qwen2", "qwen3"])
    t.add_argument("--tokenizer", required=True)
    t.add_argument("--shard", action="store_true")
    for name in ("expect", "check"):
        s = sub.add_parser(name)
        s.add_argument("model")
        s.add_argument("case")
        if name == "expect":
            s.add_argument("--device", default="cpu", help="where transformers computes the expected logits")
    args = p.parse_args()
    {"tiny": tiny, "expect": expect, "check": check}[args.cmd](args)


if __name__ == "__main__":
    main()
