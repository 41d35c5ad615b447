#!/usr/bin/env bash
# A PPO step's tokens/s: ca-train ppo against the same step written as a PyTorch training loop over transformers
# (bench/ppo_step_reference.py: the same PPO and value losses, GAE, whitening, gradient clipping and AdamW for the
# actor and the critic), on the same checkpoint, synthetic trajectories, batch, sequence length and dtype, one
# after the other on one device. Each side runs WARMUP + STEPS steps; the table shows the median tokens/s of the
# last STEPS (a step: old log-probabilities and values, advantages, one update of actor and critic; tokens: the
# batch's, prompt and response).
#
#   bench/ppo_step.sh cpu [MODEL]    default: a tiny random Llama with SmolLM2's tokenizer (tests/model); float32
#   bench/ppo_step.sh cuda [MODEL]   default: SmolLM2-135M-Instruct (scripts/setup-models.sh); float32 and bfloat16
#
# SHAPES (BATCHxSEQLEN words; cpu default "4x128", cuda "8x512 8x1024"), DTYPES, WARMUP (default 2), STEPS
# (default 5), THREADS (both sides' CPU threads; default nproc), CA_BIN (default build/bin), CA_PYTHON (default
# the venv's python; on a GPU machine a python with CUDA torch and transformers), SMOLLM2 (the tokenizer of the
# tiny model). Exits 1 when a side fails or ca-train's step is not the tokens the reference trains on.
set -euo pipefail
device=${1:-cpu}
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${CA_BIN:-$root/build/bin}
py=${CA_PYTHON:-$root/.venv/bin/python}
models=${CA_MODEL_CACHE:-$HOME/.cache/cuda-agent/models}
smol=${SMOLLM2:-$models/SmolLM2-135M-Instruct}
threads=${THREADS:-$(nproc)}
warmup=${WARMUP:-2}
steps=${STEPS:-5}
case $device in
  cpu) shapes=${SHAPES:-4x128} dtypes=${DTYPES:-float32} ;;
  cuda*) shapes=${SHAPES:-8x512 8x1024} dtypes=${DTYPES:-float32 bfloat16} ;;
  *) echo "ppo_step: device '$device': cpu or cuda" >&2; exit 64 ;;
esac
[ -f "$smol/tokenizer.json" ] || { echo "ppo_step: no SmolLM2 checkpoint at $smol (scripts/setup-models.sh)" >&2; exit 66; }
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
model=${2:-}
if [ -z "$model" ]; then
  if [ "$device" = cpu ]; then
    model=$scratch/tiny
    "$py" "$root/tests/model/model_reference.py" tiny "$model" --arch llama --tokenizer "$smol" >/dev/null 2>&1
  else
    model=$smol
  fi
fi
# median FILE: the median tokens_per_s of the steps after the warm-up in a JSONL step log.
median() {
  "$py" -c 'import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
print("%.1f" % statistics.median(r["tokens_per_s"] for r in rows if r["step"] > int(sys.argv[2])))' "$1" "$warmup"
}
echo "model $model, $((warmup + steps)) steps a side, median of the last $steps, $threads threads"
printf '%-6s %-9s %5s %6s %14s %14s %6s %s\n' device dtype batch seqlen ca-train_tok/s pytorch_tok/s ratio \
  'grad_norm@1 ca/torch'
status=0
for shape in $shapes; do
  batch=${shape%x*} seqlen=${shape#*x}
  data=$scratch/data-$shape.jsonl
  "$py" "$root/bench/ppo_step_reference.py" data "$model" "$data" --batch "$batch" --seqlen "$seqlen" 2>/dev/null
  for dtype in $dtypes; do
    run=$scratch/ca-$shape-$dtype
    # One micro-batch and one minibatch: the whole batch in one forward/backward, one update (as the reference).
    if ! "$bin/ca-train" ppo --model "$model" --critic "$model" --data "$data" --out "$run" --device "$device" \
         --dtype "$dtype" --steps $((warmup + steps)) --batch "$batch" --micro-batch "$batch" --minibatches 1 \
         --epochs 1 --warmup 0 --checkpoint-every 1000000 -j "$threads" --max-context $((seqlen + 1)) \
         >"$scratch/ca.log" 2>&1; then
      echo "ppo_step: ca-train failed ($device $dtype $shape):" >&2; tail -5 "$scratch/ca.log" >&2; status=1; continue
    fi
    if ! "$py" "$root/bench/ppo_step_reference.py" run "$model" "$data.ids.json" --steps $((warmup + steps)) \
         --device "$device" --dtype "$dtype" --threads "$threads" >"$scratch/ref.jsonl" 2>"$scratch/ref.log"; then
      echo "ppo_step: the PyTorch reference failed ($device $dtype $shape):" >&2; tail -5 "$scratch/ref.log" >&2
      status=1; continue
    fi
    tokens=$("$py" -c 'import json, sys; print(sorted({json.loads(l)["tokens"] for l in open(sys.argv[1])}))' "$run/log.jsonl")
    if [ "$tokens" != "[$((batch * seqlen))]" ]; then
      echo "ppo_step: ca-train's steps had $tokens tokens, not $((batch * seqlen)) ($shape)" >&2; status=1; continue
    fi
    # The same step on both sides: step 1's actor gradient norm (before clipping) agrees (1e-3 relative in float32,
    # 0.1 in bfloat16, whose products round differently in the two implementations).
    read -r gca gref < <("$py" -c 'import json, sys
first = lambda p: next(json.loads(l) for l in open(p) if l.startswith("{"))
print(first(sys.argv[1])["grad_norm"], first(sys.argv[2])["grad_norm"])' "$run/log.jsonl" "$scratch/ref.jsonl")
    tol=$([ "$dtype" = float32 ] && echo 1e-3 || echo 0.1)
    if ! awk -v a="$gca" -v b="$gref" -v t="$tol" 'BEGIN { d = a - b; exit !((d < 0 ? -d : d) <= t * b) }'; then
      echo "ppo_step: step 1's gradient norms differ: ca-train $gca, PyTorch $gref ($dtype $shape)" >&2; status=1
    fi
    ca=$(median "$run/log.jsonl") ref=$(median "$scratch/ref.jsonl")
    printf '%-6s %-9s %5s %6s %14s %14s %6s %s\n' "$device" "$dtype" "$batch" "$seqlen" "$ca" "$ref" \
      "$(awk -v a="$ca" -v b="$ref" 'BEGIN { printf "%.2f", a / b }')" "$(printf '%.6g/%.6g' "$gca" "$gref")"
    rm -rf "$run"  # its checkpoint: the actor, the critic and their optimizer states
  done
done
exit $status
