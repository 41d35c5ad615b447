#!/usr/bin/env bash
# Generation throughput of the C++ policy model (ca-model generate) against transformers' generate() on the same
# checkpoint, prompts (chat-formatted, different lengths, left-padded), batch and greedy decoding, on one device;
# tokens/s of each and their ratio. Usage: bench/model_generate.sh [cpu|cuda] [MODEL_DIR]
# (default: SmolLM2-135M-Instruct from scripts/setup-models.sh). BATCH (default 8) and MAX_TOKENS (default 64);
# CA_BIN defaults to build/bin, CA_PYTHON (transformers' side) to the venv's python. Both sides run with the same LibTorch thread count (THREADS, default: nproc).
set -euo pipefail
device=${1:-cpu}
root=$(cd "$(dirname "$0")/.." && pwd)
model=${2:-${CA_MODEL_CACHE:-$HOME/.cache/cuda-agent/models}/SmolLM2-135M-Instruct}
bin=${CA_BIN:-$root/build/bin}
py=${CA_PYTHON:-$root/.venv/bin/python}
batch=${BATCH:-8}
max_tokens=${MAX_TOKENS:-64}
threads=${THREADS:-$(nproc)}
[ -f "$model/config.json" ] || { echo "model_generate: no checkpoint at $model (scripts/setup-models.sh)" >&2; exit 66; }
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
"$py" "$root/tests/model/generate_reference.py" prompts "$model" --batch "$batch" >"$scratch/prompts.jsonl" 2>/dev/null
hf=$("$py" "$root/tests/model/generate_reference.py" bench "$model" --batch "$batch" --max-tokens "$max_tokens" \
       --threads "$threads" --device "$device" 2>/dev/null | tail -1)
# A first batch warms up (allocator, kernels), as transformers' side does; the second is timed.
cat "$scratch/prompts.jsonl" "$scratch/prompts.jsonl" >"$scratch/twice.jsonl"
"$bin/ca-model" generate -m "$model" --device "$device" --temperature 0 --no-stop --max-tokens "$max_tokens" \
  --batch "$batch" -j "$threads" "$scratch/prompts.jsonl" -o /dev/null 2>"$scratch/warm.txt"
"$bin/ca-model" generate -m "$model" --device "$device" --temperature 0 --no-stop --max-tokens "$max_tokens" \
  --batch "$batch" -j "$threads" "$scratch/twice.jsonl" -o /dev/null 2>"$scratch/ca.txt"
# Two batches minus one batch: the second batch's time alone.
read -r t1 s1 < <(sed -n 's/.*generated \([0-9]*\) tokens in \([0-9.]*\) s.*/\1 \2/p' "$scratch/warm.txt")
read -r t2 s2 < <(sed -n 's/.*generated \([0-9]*\) tokens in \([0-9.]*\) s.*/\1 \2/p' "$scratch/ca.txt")
"$py" - "$hf" "$t1" "$s1" "$t2" "$s2" "$batch" "$max_tokens" "$threads" "$model" <<'PY'
import json, sys
hf = json.loads(sys.argv[1])
t1, s1, t2, s2 = int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
ca = (t2 - t1) / (s2 - s1)
print(f"model {sys.argv[9]}, batch {sys.argv[6]}, {sys.argv[7]} new tokens each, greedy, {sys.argv[8]} threads")
print(f"transformers generate: {hf['tokens_per_s']:.1f} tokens/s")
print(f"ca-model generate:     {ca:.1f} tokens/s")
print(f"ratio: {ca / hf['tokens_per_s']:.2f}x")
PY
