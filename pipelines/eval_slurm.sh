#!/usr/bin/env bash
# pipelines/eval.mk's shards as a Slurm job array: array task i runs shard i (pipelines/shard_command.sh), and a
# job that depends on the whole array merges them and computes the metrics over the whole suite.
#
#   pipelines/eval_slurm.sh SUITE SHARDS OUT [sbatch options...]   # submits (needs sbatch); MODELNEW=, POLICY= or
#                                                                  # SOLUTIONS=, EVAL_FLAGS=, BIN= as for eval.mk
#   pipelines/eval_slurm.sh --dry-run SUITE SHARDS OUT             # no Slurm: writes the shards and prints, per
#                                                                  # array index, the command it would run, then the merge
#
# Inside the array (SLURM_ARRAY_TASK_ID set, started by this script through sbatch) it runs its one shard.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dry=""
[ "${1:-}" = --dry-run ] && { dry=1; shift; }
suite=${1:?usage: eval_slurm.sh [--dry-run] SUITE SHARDS OUT [sbatch options]}
shards=${2:?usage: eval_slurm.sh [--dry-run] SUITE SHARDS OUT}
out=${3:?usage: eval_slurm.sh [--dry-run] SUITE SHARDS OUT}
shift 3
export BIN=${BIN:-$here/../build/bin}
if [ -n "${SLURM_ARRAY_TASK_ID:-}" ]; then
  exec bash "$here/shard_command.sh" "$out" "$SLURM_ARRAY_TASK_ID"
fi
python3 "$here/shard.py" "$suite" "$shards" "$out/shards" >&2 || exit $?
merge="bash $here/shard_command.sh $out merge > $out/judged.jsonl && $BIN/ca-eval run --suite $suite --judged $out/judged.jsonl -o $out/results.jsonl && $BIN/ca-eval report $out/results.jsonl -o $out/report"
if [ -n "$dry" ]; then
  for ((i = 0; i < shards; i++)); do
    command=$(DRY_RUN=1 bash "$here/shard_command.sh" "$out" "$i") || exit $?
    printf 'array %d: %s\n' "$i" "$command"
  done
  printf 'merge: %s\n' "$merge"
  exit 0
fi
command -v sbatch >/dev/null || { echo "eval_slurm.sh: sbatch not found (use --dry-run to see the commands)" >&2; exit 69; }
mkdir -p "$out/slurm"
array=$(sbatch --parsable --array=0-$((shards - 1)) --output="$out/slurm/shard-%a.log" "$@" \
  --export=ALL "$here/eval_slurm.sh" "$suite" "$shards" "$out") || exit $?
sbatch --parsable --dependency=afterok:"$array" --output="$out/slurm/merge.log" "$@" --export=ALL \
  --wrap="$merge"
