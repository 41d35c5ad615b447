#!/usr/bin/env bash
# The built-in policy through ca-rollout on KernelBench problems on cuda: every KB_EVERY-th problem of levels 1 and
# 2 (default 10: 20 problems) imported at KB_SCALE (default 1, full size), one episode each, judged by the harness
# (ca-verify | ca-profile | ca-reward, with the torch.compile baseline unless NO_COMPILE=1). Writes under OUT_DIR:
# tasks.jsonl, trajectories.jsonl, summary.txt (tests/gpu/summarise_rollout.py) and rollout.log.
# Usage: agent_builtin.sh OUT_DIR. BACKEND=cpu runs the same on the CPU (with KB_SCALE=16). CA_BIN defaults to build-gpu/bin; CA_PYTHON to python3 (CUDA torch).
# All of levels 1 and 2 (200 problems) at full size: KB_EVERY=1 agent_builtin.sh OUT_DIR (BUILTIN_VARIANTS=1 tries one
# kernel variant per task, the quickest full pass; ROLLOUT_JOBS episodes at once; --resume continues a run cut short).
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
"$CA_BIN/ca-crawl" kernelbench level1 level2 --scale "${KB_SCALE:-1}" -o tasks.jsonl 2>>"$out/rollout.log"
echo "import: $((SECONDS - start)) s, $(wc -l <tasks.jsonl) tasks" | tee -a "$out/rollout.log"
chmod -R a+rX "$work"  # the weights too: the sandbox's user reads them
cp tasks.jsonl "$out/tasks.jsonl"
start=$SECONDS
# shellcheck disable=SC2046 # an optional flag
"$CA_BIN/ca-rollout" --policy builtin --backend "${BACKEND:-cuda}" -j "${ROLLOUT_JOBS:-4}" $([ "${NO_COMPILE:-0}" = 1 ] && echo --no-compile) \
  --builtin-variants "${BUILTIN_VARIANTS:-4}" --resume tasks.jsonl -o "$out/trajectories.jsonl" 2>>"$out/rollout.log"
code=$?
echo "rollout: exit $code, $((SECONDS - start)) s" | tee -a "$out/rollout.log"
python3 "$src/tests/gpu/summarise_rollout.py" "$out/trajectories.jsonl" | tee "$out/summary.txt"
exit "$code"
