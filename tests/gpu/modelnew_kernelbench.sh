#!/usr/bin/env bash
# KernelBench's own few-shot examples judged as KernelBench-format solutions on cuda (docs/EVAL.md): each
# model_new_ex_<name>.py (ModelNew with CUDA through load_inline, MIT, ScalingIntelligence/KernelBench src/prompts/)
# against its model_ex_<name>.py, imported with ca-crawl kernelbench; plus, for the first of them, a known-bad
# ModelNew that returns its first input, which must be rejected. Prints the results and the report's disagreement
# section; exits 1 when an example fails this harness or the known-bad one passes.
#
# Usage: modelnew_kernelbench.sh OUT_DIR. KB_PROMPTS is the folder with the model_ex_*.py / model_new_ex_*.py pairs
# (default: the first of ../shared/benchmarks/kernelbench/prompts, ../shared/benchmarks/kernelbench, and
# $KERNELBENCH/src/prompts that has them). CA_BIN defaults to build-gpu/bin, CA_PYTHON to python3 (CUDA torch).
set -uo pipefail
out=${1:?usage: modelnew_kernelbench.sh OUT_DIR}
CA_SOURCE_DIR=${CA_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
CA_BIN=${CA_BIN:-$CA_SOURCE_DIR/build-gpu/bin}
export CA_PYTHON=${CA_PYTHON:-python3}
prompts=${KB_PROMPTS:-}
for candidate in "$CA_SOURCE_DIR/../shared/benchmarks/kernelbench/prompts" "$CA_SOURCE_DIR/../shared/benchmarks/kernelbench" \
  "${KERNELBENCH:-/nonexistent}/src/prompts"; do
  [ -n "$prompts" ] || { compgen -G "$candidate/model_new_ex_*.py" >/dev/null && prompts=$candidate; }
done
[ -n "$prompts" ] || { echo "no model_new_ex_*.py found; set KB_PROMPTS to KernelBench's src/prompts" >&2; exit 1; }
mkdir -p "$out/problems" "$out/solutions" "$out/bad"
first=""
for solution in "$prompts"/model_new_ex_*.py; do
  name=$(basename "$solution" .py); name=${name#model_new_ex_}
  [ -f "$prompts/model_ex_$name.py" ] || continue
  cp "$prompts/model_ex_$name.py" "$out/problems/$name.py"
  cp "$solution" "$out/solutions/$name.py"
  [ -n "$first" ] || first=$name
done
[ -n "$first" ] || { echo "no model_ex_/model_new_ex_ pairs in $prompts" >&2; exit 1; }
cat >"$out/bad/$first.py" <<'PY'
import torch.nn as nn


class ModelNew(nn.Module):  # known bad: returns its first input
    def __init__(self, *args):
        super().__init__()

    def forward(self, *inputs):
        return inputs[0]
PY
"$CA_BIN/ca-crawl" kernelbench "$out/problems" --device cuda --params-dir "$out/params" -o "$out/tasks.jsonl" || exit 1
status=0
"$CA_BIN/ca-eval" run --suite "$out/tasks.jsonl" --modelnew "$out/solutions" --backend cuda --workdir "$out/work" \
  -o "$out/results.jsonl" || exit 1
"$CA_BIN/ca-eval" report "$out/results.jsonl" -o "$out/report" || exit 1
"$CA_BIN/ca-eval" run --suite "$out/tasks.jsonl" --modelnew "$out/bad" --backend cuda --no-compile \
  --workdir "$out/work-bad" -o "$out/bad_results.jsonl" || exit 1
sed -n '/^## Tasks/,$p' "$out/report/report.md"
python3 - "$out/results.jsonl" "$out/bad_results.jsonl" "$first" <<'PY' || status=1
import json, sys
good = [json.loads(l) for l in open(sys.argv[1])]
bad = {r["task_id"]: r for r in map(json.loads, open(sys.argv[2])) if r["kind"] == "eval_task"}
ok = True
for r in good[:-1]:
    print(r["task_id"], r["verdict"], r["stage"], "KernelBench:", r.get("kernelbench"), "speedup:", r["speedup"])
    ok &= r["verdict"] == "PASS"
rejected = [r for r in bad.values() if r["samples"]]
print("known bad:", [(r["task_id"], r["verdict"], r["stage"]) for r in rejected])
ok &= len(rejected) == 1 and rejected[0]["verdict"] == "FAIL"
sys.exit(0 if ok else 1)
PY
exit $status
