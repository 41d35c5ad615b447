#!/usr/bin/env bash
# `make demo`: the project's whole loop on built-in defaults, on the CPU (on cuda where an NVIDIA GPU answers):
#
#   ca-crawl ops -> ca-synth -> ca-filter                      tasks, split into a training and a held-out set
#   ca-rollout --policy builtin                                 the built-in kernel writer on both sets
#   ca-train rft                                                a small model imitates its rewarded episodes
#   ca-train value, then pipelines/rl.mk (rollout -> ppo)       on-policy RL from the RFT checkpoint
#   ca-rollout --policy local:CKPT                              the trained model on the held-out set
#   ca-eval run --judged, ca-eval report, ca-eval compare       metrics, report.md/report.html, trained vs builtin
#
# The model is SmolLM2-135M-Instruct (scripts/setup-models.sh fetches it). Every stage writes its outputs under
# $DEMO_OUT (default build/demo) and a stamp .done/<stage> when it succeeds; a rerun skips stamped stages and
# resumes an interrupted rollout or training run. A stage that fails stops the demo with its log's last lines.
# Set-up: CA_BIN (the tools; default build/bin), DEMO_OUT, DEMO_BACKEND (cpu or cuda; default: cuda when nvidia-smi lists a GPU), DEMO_SMALL=1 (a
# plumbing run: a tiny random model, 2+2 tasks, one update each; tests/cli/demo_small.sh).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
bin=${CA_BIN:-$root/build/bin}
py=$root/.venv/bin/python
out=${DEMO_OUT:-$root/build/demo}
small=${DEMO_SMALL:-0}
if [ -z "${DEMO_BACKEND:-}" ]; then
  DEMO_BACKEND=cpu
  if nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then DEMO_BACKEND=cuda; fi
fi
backend=$DEMO_BACKEND
case "$backend" in cpu | cuda) ;; *)
  echo "demo: error: DEMO_BACKEND=$backend: expected cpu or cuda" >&2
  exit 64
  ;;
esac
jobs=$(nproc)
mkdir -p "$out/.done" "$out/logs"

# Sizes. The full run is sized for about 15 minutes on 2 cores; DEMO_SMALL for a test.
if [ "$small" = 1 ]; then
  n_synth=12 n_train=2 n_heldout=2 rft_steps=1 value_steps=1 ppo_iters=1 samples=1 max_tokens=16
else
  n_synth=40 n_train=4 n_heldout=4 rft_steps=2 value_steps=1 ppo_iters=1 samples=1 max_tokens=64
fi
n_pool=$((3 * (n_train + n_heldout) / 2))
compile_flag=--no-compile  # the torch.compile baseline costs about a minute a task on a CPU
[ "$backend" = cuda ] && compile_flag=
device=$backend

t0=$(date +%s)
elapsed() { local s=$(($(date +%s) - $1)); printf '%dm%02ds' $((s / 60)) $((s % 60)); }

# stage NAME TITLE: runs the function stage_NAME unless .done/NAME exists; its output goes to logs/NAME.log
# (and, indented, to the terminal). A failure stops the demo naming the stage, its exit code and its log.
stage() {
  local name=$1 title=$2 start code
  if [ -f "$out/.done/$name" ]; then
    echo "== $title: done before, reused ($(cat "$out/.done/$name"))"
    return 0
  fi
  echo "== $title"
  start=$(date +%s)
  set +e
  # A pipeline, not a process substitution: its end waits for the log to be written.
  (set -e; "stage_$name") 2>&1 | tee -a "$out/logs/$name.log" | sed -u 's/^/   /'
  code=${PIPESTATUS[0]}
  set -e
  if [ "$code" -ne 0 ]; then
    echo "demo: error: stage '$name' failed with exit code $code; its log: $out/logs/$name.log" >&2
    echo "demo: rerun 'make demo' to resume from this stage" >&2
    exit "$code"
  fi
  elapsed "$start" >"$out/.done/$name"
  echo "   ($(cat "$out/.done/$name"))"
}

# --- stages ---

model=${DEMO_MODEL:-tiny}
stage_model() {
  if [ "$model" = tiny ]; then
    bash scripts/setup-models.sh python
    local smollm2="${CA_MODEL_CACHE:-$HOME/.cache/cuda-agent/models}/SmolLM2-135M-Instruct"
    bash scripts/setup-models.sh smollm2 >/dev/null  # the tiny model borrows its tokenizer
    "$py" tests/model/model_reference.py tiny "$out/model.tmp" --arch llama --tokenizer "$smollm2" >/dev/null
    # An episode's first prompt (system prompt, tool schemas, the task) is about 2,500 tokens.
    "$py" -c 'import json, sys; c = json.load(open(sys.argv[1])); c["max_position_embeddings"] = 8192; json.dump(c, open(sys.argv[1], "w"))' \
      "$out/model.tmp/config.json"
    rm -rf "$out/model" && mv "$out/model.tmp" "$out/model"
    echo "a tiny random Llama with SmolLM2's tokenizer (DEMO_MODEL=smollm2 for the real model)"
  elif [ "$model" = smollm2 ]; then
    bash scripts/setup-models.sh smollm2
    ln -sfn "${CA_MODEL_CACHE:-$HOME/.cache/cuda-agent/models}/SmolLM2-135M-Instruct" "$out/model"
  else
    echo "demo: error: DEMO_MODEL=$model: expected tiny or smollm2" >&2
    return 64
  fi
}

stage_tasks() {
  "$bin/ca-crawl" ops --usable -o "$out/usable.jsonl"
  echo "ca-crawl ops --usable: $(wc -l <"$out/usable.jsonl") operators usable in tasks"
  "$bin/ca-synth" -n "$n_synth" --seed 1 --cost-model "$backend" --target-ms 0.05 -o "$out/synth.jsonl" \
    "$out/usable.jsonl"
  "$bin/ca-filter" --device "$backend" -j "$jobs" --rejects "$out/rejects.jsonl" -o "$out/kept.jsonl" \
    "$out/synth.jsonl"
  # Training tasks first, then the held-out ones: the kept tasks in order, the builtin's covered ones only
  # (split_tasks below), so that there are episodes to imitate.
  head -n "$n_pool" "$out/kept.jsonl" >"$out/pool.jsonl"
  echo "ca-synth: $(wc -l <"$out/synth.jsonl") composed; ca-filter: $(wc -l <"$out/kept.jsonl") kept; the first $n_pool go on"
}

stage_builtin() {
  "$bin/ca-rollout" --policy builtin --backend "$backend" $compile_flag -j "$jobs" --seed 1 --resume \
    -o "$out/builtin.jsonl" "$out/pool.jsonl"
}

# The training set: the first n_train kept tasks on which the builtin earned a reward; the held-out set: the next
# n_heldout kept tasks, whatever the builtin did on them.
stage_split() {
  "$py" - "$out" "$n_train" "$n_heldout" <<'PY'
import json, sys
out, n_train, n_heldout = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
tasks = [json.loads(l) for l in open(f"{out}/pool.jsonl")]
episodes = {}
for l in open(f"{out}/builtin.jsonl"):
    r = json.loads(l)
    episodes[r["task_id"]] = r
rewarded = lambda t: (episodes.get(t["id"]) or {}).get("reward", {}).get("value", -1) > 0
train = [t for t in tasks if rewarded(t)][:n_train]
ids = {t["id"] for t in train}
heldout = [t for t in tasks if t["id"] not in ids][:n_heldout]
if len(train) < n_train or len(heldout) < n_heldout:
    sys.exit(f"demo: {len(tasks)} kept tasks give {len(train)} training tasks (of {n_train}) and "
             f"{len(heldout)} held-out ones (of {n_heldout})")
for name, part in (("train", train), ("heldout", heldout)):
    with open(f"{out}/{name}.jsonl", "w") as f:
        f.writelines(json.dumps(t) + "\n" for t in part)
    with open(f"{out}/builtin-{name}.jsonl", "w") as f:
        f.writelines(json.dumps(episodes[t["id"]]) + "\n" for t in part)
print(f"{len(train)} training tasks (the builtin rewarded on each), {len(heldout)} held-out tasks")
PY
}

stage_rft() {
  "$bin/ca-train" rft --model "$out/model" --data "$out/builtin-train.jsonl" --out "$out/rft" --device "$device" \
    --steps "$rft_steps" --batch 1 --micro-batch 1 --lr 1e-4 --warmup 1 --checkpoint-every 1 --seed 1 -j "$jobs" \
    --resume
}

rft_ckpt() { printf '%s/rft/checkpoint-%06d' "$out" "$rft_steps"; }

stage_value() {
  "$bin/ca-train" value --model "$(rft_ckpt)" --data "$out/builtin-train.jsonl" --out "$out/value" \
    --device "$device" --steps "$value_steps" --batch 1 --micro-batch 1 --lr 1e-4 --seed 1 -j "$jobs" --resume
}

stage_rl() {
  make --no-print-directory -f pipelines/rl.mk TASKS="$out/train.jsonl" ACTOR="$(rft_ckpt)" \
    CRITIC="$(printf '%s/value/checkpoint-%06d' "$out" "$value_steps")" OUT="$out/rl" ITERS="$ppo_iters" \
    SAMPLES="$samples" STEPS=1 BATCH=$((n_train * samples)) \
    ROLLOUT_FLAGS="--backend $backend --device $device $compile_flag -j $jobs --max-tokens $max_tokens --max-turns 4" \
    PPO_FLAGS="--device $device --micro-batch 1 --minibatches 2 -j $jobs"
}

final_ckpt() { printf '%s/rl/iter-%d/ppo/checkpoint-000001' "$out" "$ppo_iters"; }

stage_trained() {
  "$bin/ca-rollout" --policy "local:$(final_ckpt)" --backend "$backend" --device "$device" $compile_flag -j "$jobs" --seed 100 \
    --max-tokens "$max_tokens" --max-turns 4 --resume -o "$out/trained-heldout.jsonl" "$out/heldout.jsonl"
}

stage_eval() {
  local who
  for who in builtin trained; do
    mkdir -p "$out/eval-$who"
    "$bin/ca-eval" run --suite "$out/heldout.jsonl" --judged "$out/$who-heldout.jsonl" --backend "$backend" \
      -o "$out/eval-$who/results.jsonl"
    "$bin/ca-eval" report "$out/eval-$who/results.jsonl" -o "$out/eval-$who"
  done
  "$bin/ca-eval" compare "$out/eval-builtin/results.jsonl" "$out/eval-trained/results.jsonl" >"$out/compare.md"
}

stage model "the policy model"
stage tasks "ca-crawl ops --usable | ca-synth -n $n_synth | ca-filter: tasks for $backend"
stage builtin "ca-rollout --policy builtin: the built-in kernel writer on $n_pool kept tasks"
stage split "training and held-out tasks"
stage rft "ca-train rft: $rft_steps updates on the builtin's rewarded episodes of the training tasks"
stage value "ca-train value: the critic, $value_steps updates"
stage rl "pipelines/rl.mk: $ppo_iters iteration(s) of ca-rollout --policy local:CKPT -> ca-train ppo"
stage trained "ca-rollout --policy local:CKPT: the trained model on the held-out tasks"
stage eval "ca-eval: the trained model and the builtin on the held-out tasks"

echo
echo "== Summary ($(elapsed "$t0") this run; backend $backend)"
"$py" - "$out" <<'PY'
import json, sys
out = sys.argv[1]
def summary(who):
    return [json.loads(l) for l in open(f"{out}/eval-{who}/results.jsonl")][-1]["overall"]
def fmt(x, pct=False):
    return "-" if x is None else (f"{100 * x:.0f}%" if pct else f"{x:.2f}")
print(f"   {'held-out tasks':26} {'trained model':>14} {'builtin':>10}")
t, b = summary("trained"), summary("builtin")
print(f"   {'tasks':26} {t['tasks']:>14} {b['tasks']:>10}")
print(f"   {'pass rate':26} {fmt(t['pass_rate'], True):>14} {fmt(b['pass_rate'], True):>10}")
print(f"   {'mean reward':26} {fmt(t['mean_reward']):>14} {fmt(b['mean_reward']):>10}")
print(f"   {'geomean speedup vs eager':26} {fmt(t['geomean_speedup_passing']['vs_eager']):>14} "
      f"{fmt(b['geomean_speedup_passing']['vs_eager']):>10}")
PY
echo "   report: $out/eval-trained/report.html (and report.md); the builtin's: $out/eval-builtin/report.html"
echo "   trained vs builtin: $out/compare.md; training logs: $out/rft/log.jsonl, $out/rl/iter-*/ppo/log.jsonl"
