#!/usr/bin/env bash
# The built-in policy through ca-rollout on KernelBench problems on cuda: every KB_EVERY-th problem of levels 1 and
# 2 (default 10: 20 problems) imported at KB_SCALE (default 1, full size), one episode each, judged by the harness
# (ca-verify | ca-profile | ca-reward, with the torch.compile baseline unless NO_COMPILE=1). Writes under OUT_DIR:
# tasks.jsonl, trajectories.jsonl, summary.txt (tests/gpu/summarise_rollout.py) and rollout.log.
# Usage: agent_builtin.sh OUT_DIR. BACKEND=cpu runs the same on the CPU (with KB_SCALE=16). CA_BIN defaults to build-gpu/bin; CA_PYTHON to python3 (CUDA torch).
# All of levels 1 and 2 (200 problems) at full size: KB_EVERY=1 agent_builtin.sh OUT_DIR (BUILTIN_VARIANTS=1 tries one
# kernel variant per task, the quickest full pass; ROLLOUT_JOBS episodes at once).
# Over several calls of a machine with a time limit: IMPORT_JOBS imports at once (default 8); ROLLOUT_DEADLINE
# (seconds; or ROLLOUT_END_AT, a time in seconds since the epoch) stops ca-rollout with SIGINT, which keeps every finished episode in trajectories.jsonl (its journal) and
# leaves time for the summary; RESUME_FROM (a trajectories.jsonl of an earlier call) is resumed, its episodes kept
# (those with an error run again).
set -uo pipefail
out=${1:?usage: agent_builtin.sh OUT_DIR}
src=$(cd "$(dirname "$0")/../.." && pwd)
CA_BIN=${CA_BIN:-$src/build-gpu/bin}
export CA_PYTHON=${CA_PYTHON:-python3}
benchmarks=${KB_BENCHMARKS:-}
for candidate in "$src/.kb" "$src/../shared/benchmarks/kernelbench"; do
  [ -n "$benchmarks" ] || { [ -d "$candidate/level1" ] && benchmarks=$candidate; }
done
mkdir -p "$out"
work=$(mktemp -d /dev/shm/ca-agent.XXXXXX 2>/dev/null || mktemp -d)
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"  # the weights must be readable by the sandbox's user
for level in 1 2; do
  mkdir -p "$work/level$level"
  # shellcheck disable=SC2012 # plain problem file names
  ls "$benchmarks/level$level" | sort -n | awk -v every="${KB_EVERY:-10}" 'NR % every == 1' |
    while read -r f; do cp "$benchmarks/level$level/$f" "$work/level$level/"; done
done
cd "$work" || exit 1
start=$SECONDS
# The import is one Python process per ca-crawl; IMPORT_JOBS of them over shares of the problems (each problem is
# seeded alone, so the shares give the records one import would), the weights in one folder.
jobs=${IMPORT_JOBS:-8}
for level in 1 2; do
  # shellcheck disable=SC2012 # plain problem file names
  ls "level$level" | sort -n | awk -v jobs="$jobs" '{ print (NR - 1) % jobs, $0 }' | while read -r share f; do
    mkdir -p "share$share/level$level" && mv "level$level/$f" "share$share/level$level/"
  done
done
for share in share*; do
  (cd "$share" && "$CA_BIN/ca-crawl" kernelbench level* --scale "${KB_SCALE:-1}" --params-dir "$work/params" \
     -o tasks.jsonl 2>import.log) &
done
wait
cat share*/import.log >>"$out/rollout.log"
cat share*/tasks.jsonl >tasks.jsonl
echo "import: $((SECONDS - start)) s, $(wc -l <tasks.jsonl) tasks" | tee -a "$out/rollout.log"
chmod -R a+rX "$work"  # the weights too: the sandbox's user reads them
cp tasks.jsonl "$out/tasks.jsonl"
[ -z "${RESUME_FROM:-}" ] || cp "$RESUME_FROM" "$out/trajectories.jsonl"
echo "resumed: $(cat "$out/trajectories.jsonl" 2>/dev/null | wc -l) episodes" | tee -a "$out/rollout.log"
before=$(cat "$out/trajectories.jsonl" 2>/dev/null | wc -l)
# The GPU's busy share while episodes run (utilization.gpu: the share of time a kernel was running).
nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader,nounits -lms 500 >"$out/gpu_busy.csv" 2>/dev/null &
sampler=$!
start=$SECONDS
# shellcheck disable=SC2046 # an optional flag
deadline=${ROLLOUT_DEADLINE:-100000}
[ -z "${ROLLOUT_END_AT:-}" ] || deadline=$((ROLLOUT_END_AT - $(date +%s)))
timeout -s INT -k 60 "$deadline" "$CA_BIN/ca-rollout" --policy builtin --backend "${BACKEND:-cuda}" -j "${ROLLOUT_JOBS:-4}" $([ "${NO_COMPILE:-0}" = 1 ] && echo --no-compile) \
  --builtin-variants "${BUILTIN_VARIANTS:-4}" --resume tasks.jsonl -o "$out/trajectories.jsonl" 2>>"$out/rollout.log"
code=$?
kill "$sampler" 2>/dev/null
elapsed=$((SECONDS - start))
episodes=$(($(wc -l <"$out/trajectories.jsonl") - before))
echo "rollout: exit $code, $elapsed s, $episodes episodes this run," \
  "$(awk -v e="$episodes" -v t="$elapsed" 'BEGIN { printf "%.0f", t ? e * 3600 / t : 0 }') episodes per GPU-hour," \
  "GPU busy $(awk -F, '{ s += $1; n++ } END { printf "%.1f%%", n ? s / n : 0 }' "$out/gpu_busy.csv")," \
  "peak device memory $(awk -F, '$2 > m { m = $2 } END { print m + 0 }' "$out/gpu_busy.csv") MiB" | tee -a "$out/rollout.log"
python3 "$src/tests/gpu/summarise_rollout.py" "$out/trajectories.jsonl" | tee "$out/summary.txt"
exit "$code"
