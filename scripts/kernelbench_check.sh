#!/usr/bin/env bash
# Imports KernelBench level 1 and 2 on the CPU and checks every imported task
# against the original problem in eager PyTorch: the numbers in the README.
# Usage: scripts/kernelbench_check.sh OUT_DIR [SCALE (default 16)] [PROBLEM_GLOB (default '*')]
# OUT_DIR gets tasks.jsonl, params/, dump/, crawl.log (ending "imported N of M
# (level 1: a/b, level 2: c/d)") and check.txt (a verdict a task, then a summary
# per level). Needs build/bin/ca-crawl (or CA_BIN) and .venv (or CA_PYTHON).
set -uo pipefail
out=${1:?usage: kernelbench_check.sh OUT_DIR [SCALE] [PROBLEM_GLOB]}
scale=${2:-16}
root=$(cd "$(dirname "$0")/.." && pwd)
CA_BIN=${CA_BIN:-$root/build/bin}
python=${CA_PYTHON:-$root/.venv/bin/python}
benchmarks=${KB_BENCHMARKS:-$root/../shared/benchmarks/kernelbench}
mkdir -p "$out/problems/level1" "$out/problems/level2"
for level in level1 level2; do
  for problem in "$benchmarks/$level"/${3:-*}.py; do
    [ -e "$problem" ] && ln -sf "$problem" "$out/problems/$level/"
  done
done
cd "$out" || exit 1
start=$SECONDS
CA_PYTHON=$python "$CA_BIN/ca-crawl" kernelbench problems/level1 problems/level2 --scale "$scale" \
  --params-dir params --dump dump -o tasks.jsonl 2>crawl.log
echo "import: exit $?, $((SECONDS - start)) s; $(tail -1 crawl.log)"
start=$SECONDS
"$python" "$root/bridge/check_import.py" tasks.jsonl dump >check.txt 2>&1
code=$?
echo "check: exit $code, $((SECONDS - start)) s"
grep '^level ' check.txt
exit $code
