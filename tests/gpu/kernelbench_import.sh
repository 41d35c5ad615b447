#!/usr/bin/env bash
# The KernelBench import at full size on CUDA: every problem of level 1 and 2
# is imported with `ca-crawl kernelbench --device cuda --dump` and checked
# against the original Model in eager PyTorch on the GPU
# (bridge/check_import.py --device cuda). Full-size tensors reach GBs, so the
# problems go a few at a time (KB_BATCH) and each batch's dump and weights
# (kept in /dev/shm) are deleted once checked. Inputs are drawn on the GPU with
# the project's generator (ARCHITECTURE.md, "Seeded generation").
#
# Usage: kernelbench_import.sh OUT_DIR. OUT_DIR gets tasks.jsonl (all records),
# check.txt (one verdict a task, then a summary per level) and import.log.
# KB_PROBLEMS (a glob, default '*') picks problems and KB_SCALE (default 1)
# shrinks them, for a quick run; KB_BENCHMARKS is the folder holding level1/
# and level2/ (default ../shared/benchmarks/kernelbench, else shared/...).
# CA_BIN defaults to build-gpu/bin, CA_PYTHON to python3 (with CUDA torch and
# safetensors). KB_BATCH (default 8) problems go through one ca-crawl and one check process at a time.
set -uo pipefail
out=${1:?usage: kernelbench_import.sh OUT_DIR}
CA_SOURCE_DIR=${CA_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
CA_BIN=${CA_BIN:-$CA_SOURCE_DIR/build-gpu/bin}
export CA_PYTHON=${CA_PYTHON:-python3}
benchmarks=${KB_BENCHMARKS:-}
for candidate in "$CA_SOURCE_DIR/../shared/benchmarks/kernelbench" "$CA_SOURCE_DIR/shared/benchmarks/kernelbench"; do
  [ -n "$benchmarks" ] || { [ -d "$candidate/level1" ] && benchmarks=$candidate; }
done
[ -n "$benchmarks" ] || { echo "no KernelBench problems found; set KB_BENCHMARKS" >&2; exit 1; }
mkdir -p "$out"
scratch=$(mktemp -d /dev/shm/ca-kernelbench.XXXXXX 2>/dev/null || mktemp -d)
trap 'rm -rf "$scratch"' EXIT
: >"$out/tasks.jsonl"; : >"$out/check.txt"; : >"$out/import.log"

# import_batch LEVEL PROBLEM...: one ca-crawl and one check process for a few problems, so Python and CUDA start
# once per batch rather than once per problem.
import_batch() {
  local level=$1; shift
  # A folder named levelN holding only these problems, so the records get their level.
  rm -rf "$scratch/$level" "$scratch/work"
  mkdir -p "$scratch/$level" "$scratch/work"
  ln -s "$@" "$scratch/$level/"
  "$CA_BIN/ca-crawl" kernelbench "$scratch/$level" --scale "${KB_SCALE:-1}" --device cuda \
    --params-dir "$scratch/work" --dump "$scratch/work/dump" -o "$scratch/work/tasks.jsonl" 2>>"$out/import.log"
  cat "$scratch/work/tasks.jsonl" >>"$out/tasks.jsonl"
  # Verdict lines only; the summary is made over all problems below.
  "$CA_PYTHON" "$CA_SOURCE_DIR/bridge/check_import.py" "$scratch/work/tasks.jsonl" "$scratch/work/dump" --device cuda 2>&1 |
    grep -v '^level ' | tee -a "$out/check.txt"
}

for level in level1 level2; do
  batch=()
  for problem in "$benchmarks/$level"/${KB_PROBLEMS:-*}.py; do
    [ -e "$problem" ] || continue
    batch+=("$problem")
    if [ "${#batch[@]}" -ge "${KB_BATCH:-8}" ]; then import_batch "$level" "${batch[@]}"; batch=(); fi
  done
  [ "${#batch[@]}" -eq 0 ] || import_batch "$level" "${batch[@]}"
done

# The summary over all problems, from the verdict lines and the records.
"$CA_PYTHON" - "$out/tasks.jsonl" "$out/check.txt" <<'PY' | tee -a "$out/check.txt"
import collections, json, sys
records = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
verdicts = {}
for line in open(sys.argv[2]):
    parts = line.split()
    if len(parts) >= 2:
        verdicts[parts[1]] = parts[0]
for level in sorted({r.get("level") for r in records}, key=str):
    rs = [r for r in records if r.get("level") == level]
    imported = [r for r in rs if r["kind"] == "task"]
    equal = [r for r in imported if verdicts.get(r["id"]) in ("exact", "close")]
    exact = [r for r in imported if verdicts.get(r["id"]) == "exact"]
    print(f"level {level}: imported {len(imported)} of {len(rs)}, equal {len(equal)} ({len(exact)} exact)")
bad = [r["id"] for r in records if r["kind"] != "task" or verdicts.get(r["id"]) not in ("exact", "close")]
print("not imported or not equal:", " ".join(bad) if bad else "none")
sys.exit(1 if bad else 0)
PY
