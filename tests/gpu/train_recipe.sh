#!/usr/bin/env bash
# The training recipe end to end (docs/TRAINING.md, issue 19), twice on the same synthesized tasks:
#   recipe: built-in-policy trajectories -> ca-train rft -> ca-train value (on the RFT actor's own rollouts and the
#           built-in ones) -> ITERS on-policy PPO iterations (pipelines/rl.mk: ca-rollout --policy local:CKPT ->
#           ca-train ppo -> the next rollout);
#   plain:  the same PPO iterations from the untouched model with an untrained critic (no RFT, no value
#           pretraining), to see whether the paper's collapse shows;
# and mean reward and pass rate (reward > 0) of the starting model, the RFT actor and each arm's last actor on
# held-out synthesized tasks the training never saw.
#
#   tests/gpu/train_recipe.sh OUT_DIR                  SmolLM2-135M-Instruct on cuda (SMOLLM2 names it)
#   DEVICE=cpu TOY=1 tests/gpu/train_recipe.sh OUT_DIR a tiny random Llama on the CPU, 2 iterations (a check of the
#                                                      plumbing, about 3 minutes on 2 cores)
#
# Writes under OUT_DIR: tasks-train.jsonl, tasks-held.jsonl, builtin.jsonl, eval-<name>.jsonl (held-out
# trajectories), <arm>/steps.jsonl (every PPO iteration's step-log line with "iter"), rft/log.jsonl,
# value/log.jsonl, summary.txt (the before/after table and the per-iteration log), steps.png when matplotlib is
# there, and recipe.log (every command). Checkpoints go to WORK_DIR (default: a folder under /dev/shm), of which
# only the last iteration's are kept, and are removed at the end unless KEEP=1.
# Sizes (defaults for an H200 in about 8 minutes): TRAIN_TASKS 6, HELD_TASKS 6, SAMPLES 2 (episodes per task),
# ITERS 20, MAX_TOKENS 96 (per turn), MAX_TURNS 2, RFT_STEPS 16, VALUE_STEPS 16, JOBS 8 (episodes at once),
# ARMS "recipe plain" (one arm per call of a device with a time limit: its stages skip what OUT_DIR holds),
# DEADLINE (seconds for an arm's PPO loop; at the deadline it stops after the iteration under way, and the
# summary says how many ran). CA_BIN defaults to build-gpu/bin (build/bin for DEVICE=cpu), CA_PYTHON to python3.
set -uo pipefail
out=${1:?usage: train_recipe.sh OUT_DIR}
src=$(cd "$(dirname "$0")/../.." && pwd)
device=${DEVICE:-cuda}
if [ "$device" = cpu ]; then bin=${CA_BIN:-$src/build/bin}; else bin=${CA_BIN:-$src/build-gpu/bin}; fi
export CA_PYTHON=${CA_PYTHON:-python3}
py=$CA_PYTHON
backend=${BACKEND:-${device%%:*}}
toy=${TOY:-0}
if [ "$toy" = 1 ]; then
  train_n=${TRAIN_TASKS:-2} held_n=${HELD_TASKS:-2} samples=${SAMPLES:-2} iters=${ITERS:-2} max_tokens=${MAX_TOKENS:-16}
  max_turns=${MAX_TURNS:-1} rft_steps=${RFT_STEPS:-2} value_steps=${VALUE_STEPS:-2} jobs=${JOBS:-2}
else
  train_n=${TRAIN_TASKS:-6} held_n=${HELD_TASKS:-6} samples=${SAMPLES:-2} iters=${ITERS:-20} max_tokens=${MAX_TOKENS:-96}
  max_turns=${MAX_TURNS:-2} rft_steps=${RFT_STEPS:-16} value_steps=${VALUE_STEPS:-16} jobs=${JOBS:-8}
fi
arms=${ARMS:-recipe plain}
deadline=${DEADLINE:-100000}
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=${WORK_DIR:-$(mktemp -d /dev/shm/ca-recipe.XXXXXX 2>/dev/null || mktemp -d)}
mkdir -p "$work"
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$work"' EXIT
log=$out/recipe.log
say() { echo "$*" | tee -a "$log"; }
# run CMD...: logs the command and its stderr; exit 0 and 1 (some records or episodes failed, reported) go on.
run() {
  echo "+ $*" >>"$log"
  "$@" 2>>"$log"
  local code=$?
  [ "$code" -le 1 ] || { say "train_recipe: exit $code from: $*"; exit 1; }
}
command -v make >/dev/null || { say "train_recipe: make is needed (pipelines/rl.mk)"; exit 1; }

# The model: SmolLM2-135M-Instruct, or in TOY mode a tiny random Llama with its tokenizer and an 8192-token context
# (the episodes' prompts are longer than the tiny model's 512).
smol=${SMOLLM2:-${CA_MODEL_CACHE:-$HOME/.cache/cuda-agent/models}/SmolLM2-135M-Instruct}
[ -f "$smol/config.json" ] || { say "train_recipe: no SmolLM2 checkpoint at $smol (SMOLLM2=)"; exit 66; }
model=${MODEL:-$smol}
if [ "$toy" = 1 ] && [ -z "${MODEL:-}" ]; then
  model=$work/tiny
  run "$py" "$src/tests/model/model_reference.py" tiny "$model" --arch llama --tokenizer "$smol" >/dev/null
  "$py" -c 'import json, sys; c = json.load(open(sys.argv[1])); c["max_position_embeddings"] = 8192; json.dump(c, open(sys.argv[1], "w"))' \
    "$model/config.json"
fi
say "train_recipe: model $model on $device (workspaces: $backend); $train_n train and $held_n held-out tasks," \
  "$samples samples, $iters iterations, max $max_tokens tokens x $max_turns turns; arms: $arms"
start=$SECONDS
stamp() { say "  [$((SECONDS - start)) s] $*"; }

# Tasks: one synthesized set (1- and 2-op chains, small), cut into train and held-out parts.
if [ ! -s "$out/tasks-held.jsonl" ]; then
  cost=$([ "$backend" = cpu ] && echo cpu || echo h200)
  run "$bin/ca-synth" -n $((train_n + held_n)) --seed 19 --mix 1,1,0,0,0 --cost-model "$cost" --target-ms 0.05 \
    -o "$work/tasks.jsonl" "$src/examples/synth/ops.jsonl"
  head -n "$train_n" "$work/tasks.jsonl" >"$out/tasks-train.jsonl"
  tail -n +$((train_n + 1)) "$work/tasks.jsonl" >"$out/tasks-held.jsonl"
fi
rollout=("$bin/ca-rollout" --backend "$backend" -j "$jobs" --no-compile --max-turns "$max_turns")
local_flags=(--device "$device" --max-tokens "$max_tokens")
# evaluate NAME CKPT: the held-out episodes of a checkpoint (skipped when OUT_DIR has them).
evaluate() {
  [ -s "$out/eval-$1.jsonl" ] && return
  run "${rollout[@]}" --policy "local:$2" "${local_flags[@]}" --samples "$samples" --seed 1000 \
    "$out/tasks-held.jsonl" -o "$work/eval-$1.jsonl"
  mv "$work/eval-$1.jsonl" "$out/eval-$1.jsonl"
  stamp "held-out episodes of $1 ($2)"
}
# last_checkpoint DIR: the newest checkpoint-NNNNNN in a ca-train --out.
last_checkpoint() { find "$1" -maxdepth 1 -name 'checkpoint-*' | sort | tail -1; }

evaluate base "$model"
for arm in $arms; do
  case $arm in
    recipe)
      # Built-in-policy trajectories: the demonstrations RFT keeps (reward > 0, no wasteful patterns).
      if [ ! -s "$out/builtin.jsonl" ]; then
        run "${rollout[@]}" --policy builtin --builtin-variants 1 --samples 1 "$out/tasks-train.jsonl" \
          -o "$work/builtin.jsonl"
        mv "$work/builtin.jsonl" "$out/builtin.jsonl"
        stamp "built-in trajectories"
      fi
      rm -rf "$work/rft"
      run "$bin/ca-train" rft --model "$model" --data "$out/builtin.jsonl" --out "$work/rft" --device "$device" \
        --steps "$rft_steps" --batch 4 --micro-batch 1 --lr 1e-5 --warmup 2 --checkpoint-every "$rft_steps"
      cp "$work/rft/log.jsonl" "$out/rft.log.jsonl"
      actor=$(last_checkpoint "$work/rft")
      [ -n "$actor" ] || { say "train_recipe: ca-train rft wrote no checkpoint (see $log)"; exit 1; }
      stamp "rft: $actor"
      evaluate rft "$actor"
      # Value pretraining on the RFT actor's own episodes (their rewards vary) and the built-in ones.
      run "${rollout[@]}" --policy "local:$actor" "${local_flags[@]}" --samples "$samples" --seed 500 \
        "$out/tasks-train.jsonl" -o "$work/value-data.jsonl"
      cat "$out/builtin.jsonl" >>"$work/value-data.jsonl"
      rm -rf "$work/value"
      run "$bin/ca-train" value --model "$actor" --data "$work/value-data.jsonl" --out "$work/value" \
        --device "$device" --steps "$value_steps" --batch 4 --micro-batch 2 --lr 1e-5 --warmup 2 \
        --checkpoint-every "$value_steps"
      cp "$work/value/log.jsonl" "$out/value.log.jsonl"
      critic=$(last_checkpoint "$work/value")
      stamp "value: $critic"
      ;;
    plain)
      actor=$model critic=$model  # a policy checkpoint as critic: ca-train gives it a zero value head
      ;;
    *) say "train_recipe: arm '$arm': recipe or plain"; exit 64 ;;
  esac
  # PPO: pipelines/rl.mk one iteration at a time, so that the deadline is checked between iterations and only the
  # newest checkpoint stays (an iteration rl.mk finds done, by its trainer_state.json, is skipped).
  rl=$work/rl-$arm
  loop_start=$SECONDS
  done_iters=0
  for i in $(seq 1 "$iters"); do
    if [ $((SECONDS - loop_start)) -ge "$deadline" ]; then
      say "train_recipe: $arm: the deadline of $deadline s came after $done_iters iterations"; break
    fi
    echo "+ make -f pipelines/rl.mk ITERS=$i ($arm)" >>"$log"
    make --no-print-directory -f "$src/pipelines/rl.mk" BIN="$bin" TASKS="$out/tasks-train.jsonl" ACTOR="$actor" \
      CRITIC="$critic" ITERS="$i" SAMPLES="$samples" STEPS=1 BATCH=$((train_n * samples)) OUT="$rl" \
      ROLLOUT_FLAGS="--backend $backend -j $jobs --no-compile --max-turns $max_turns --device $device --max-tokens $max_tokens" \
      PPO_FLAGS="--device $device --micro-batch 2 --minibatches 2" >>"$log" 2>&1 ||
      { say "train_recipe: $arm: iteration $i failed (see $log)"; exit 1; }
    done_iters=$i
    # Older iterations' weights go (their logs and trainer_state.json stay: rl.mk skips them by it).
    [ "$i" -gt 1 ] && find "$rl/iter-$((i - 1))/ppo" -name '*.safetensors' -delete
    stamp "$arm: iteration $i: $(tail -1 "$rl/iter-$i/ppo/log.jsonl" | "$py" -c 'import json, sys
r = json.loads(sys.stdin.read()); print("reward_mean %.3f pass_rate %.2f kl %.4f entropy %.3f" % (r["reward_mean"], r["pass_rate"], r["kl"], r["entropy"]))')"
  done
  mkdir -p "$out/$arm"
  for i in $(seq 1 "$done_iters"); do
    "$py" -c 'import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l); r["iter"] = int(sys.argv[2]); print(json.dumps(r))' "$rl/iter-$i/ppo/log.jsonl" "$i"
  done >"$out/$arm/steps.jsonl"
  [ "$done_iters" -gt 0 ] && evaluate "$arm-ppo$done_iters" "$rl/iter-$done_iters/ppo/checkpoint-000001"
  [ "$done_iters" -gt 1 ] && rm -rf "$rl/iter-$((done_iters - 1))"
done

"$py" "$src/tests/gpu/summarise_recipe.py" "$out" | tee "$out/summary.txt"
stamp "done"
