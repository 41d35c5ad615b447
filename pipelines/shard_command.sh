#!/usr/bin/env bash
# One shard of pipelines/eval.mk or eval_slurm.sh: `shard_command.sh OUT INDEX` runs ca-eval run on
# OUT/shards/shard-INDEX.jsonl with the solution source of the environment (SOLUTIONS, MODELNEW or POLICY; BIN,
# EVAL_FLAGS), keeping its judged records in OUT/work-INDEX/. `shard_command.sh OUT merge` prints every shard's
# judged records (rewarded.jsonl, modelnew/rewarded.jsonl or trajectories.jsonl) for `ca-eval run --judged`.
# With DRY_RUN=1 it prints the command instead of running it.
set -uo pipefail
out=${1:?usage: shard_command.sh OUT INDEX|merge}
index=${2:?usage: shard_command.sh OUT INDEX|merge}
BIN=${BIN:-$(cd "$(dirname "$0")/.." && pwd)/build/bin}
if [ "$index" = merge ]; then
  for work in "$out"/work-*/; do
    for file in rewarded.jsonl modelnew/rewarded.jsonl trajectories.jsonl; do
      [ -f "$work$file" ] && cat "$work$file"
    done
  done
  exit 0
fi
if [ -n "${MODELNEW:-}" ]; then source=(--modelnew "$MODELNEW")
elif [ -n "${POLICY:-}" ]; then source=(--policy "$POLICY")
elif [ -n "${SOLUTIONS:-}" ]; then source=(--solutions "$SOLUTIONS")
else echo "shard_command.sh: set SOLUTIONS, MODELNEW or POLICY" >&2; exit 64
fi
# --resume: a shard cut short (a time limit, a requeued Slurm job) carries on from its journal; with none it starts.
# shellcheck disable=SC2206 # EVAL_FLAGS are words by design
command=("$BIN/ca-eval" run --suite "$out/shards/shard-$index.jsonl" "${source[@]}" ${EVAL_FLAGS:-}
  --workdir "$out/work-$index" -o "$out/work-$index/results.jsonl" --resume)
if [ -n "${DRY_RUN:-}" ]; then echo "${command[*]}"; exit 0; fi
mkdir -p "$out/work-$index"
exec "${command[@]}"
