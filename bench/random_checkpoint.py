"""A checkpoint of a model's architecture with random weights, for throughput benchmarks where the weights'
values do not matter and the real ones cannot travel (bench/ppo_step.sh on a GPU machine that cannot download).

    random_checkpoint.py CONFIG_DIR OUT_DIR [--seed N]

CONFIG_DIR holds config.json and the tokenizer files (no weights); OUT_DIR gets the same files and
model.safetensors, initialised as transformers initialises a new model of that config (float32).
"""
import argparse
import shutil
import sys
from pathlib import Path

import torch
from transformers import AutoConfig, AutoModelForCausalLM


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("config_dir", type=Path)
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if not (args.config_dir / "config.json").is_file():
        print(f"random_checkpoint: error: {args.config_dir}/config.json: no such file", file=sys.stderr)
        return 66
    torch.manual_seed(args.seed)
    config = AutoConfig.from_pretrained(args.config_dir)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(args.out_dir, safe_serialization=True)
    for path in args.config_dir.iterdir():
        if path.name != "config.json" and path.is_file():
            shutil.copy(path, args.out_dir / path.name)
    print(f"random_checkpoint: {sum(p.numel() for p in model.parameters())} parameters -> {args.out_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
