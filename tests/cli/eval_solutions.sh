#!/usr/bin/env bash
# ca-eval run --solutions through the real ca-verify | ca-profile | ca-reward on the cpu examples (relu_rand's
# correct, identity and calls_torch candidates, and a task with no solution), without the compiled baseline to
# keep it short; the time-dependent metrics are checked against a recomputation from the per-task records.
source "$(dirname "$0")/lib.bash"
EX="$CA_SOURCE_DIR/examples/candidates/cpu"
grep -E '"id":"cpu/relu_rand__(correct|identity|calls_torch)"' "$EX/candidates.jsonl" >"$WORK/candidates.jsonl"
grep -E '"id":"example/(relu_rand|attention_rowmax)"' "$EX/tasks.jsonl" >"$WORK/suite.jsonl"

run "$CA_BIN/ca-eval" run --suite "$WORK/suite.jsonl" --solutions "$WORK/candidates.jsonl" --no-compile -o "$WORK/results.jsonl"
expect_code 0
python3 - "$WORK/results.jsonl" <<'PY' || fail "results differ from EXPECTED or from the recomputation"
import json, math, sys
records = [json.loads(l) for l in open(sys.argv[1])]
tasks = {r["task_id"]: r for r in records if r["kind"] == "eval_task"}
s = records[-1]
relu, attention = tasks["example/relu_rand"], tasks["example/attention_rowmax"]
assert relu["samples"] == 3 and relu["verdict"] == "PASS", relu       # the best of correct, identity, calls_torch
assert relu["reward"] >= 1 and relu["speedup"]["vs_compile"] is None, relu
assert attention["verdict"] == "MISSING", attention
o = s["overall"]
assert o["tasks"] == 2 and o["passed"] == 1 and o["pass_rate"] == 0.5, o
v = relu["speedup"]["vs_eager"]
assert abs(v - relu["times_us"]["eager"] / relu["times_us"]["candidate"]) < 1e-9 * v
for p, got in o["fast_p"]["vs_eager"].items():
    assert got == (1 if v > float(p) else 0) / 2, (p, got, v)
assert all(x == 0 for x in o["fast_p"]["vs_compile"].values()) and o["faster_than_compile"] == 0
assert abs(o["geomean_speedup_passing"]["vs_eager"] - v) < 1e-12
assert abs(o["geomean_speedup_failures_as_1"]["vs_eager"] - math.sqrt(v)) < 1e-12
assert o["geomean_speedup_passing"]["vs_compile"] is None and o["geomean_speedup_passing"]["tasks_compile"] == 0
env = s["environment"]
assert env["hardware"].startswith("cpu") and env["precision"] == "pytorch" and env["backend"] == "cpu", env
PY

# A solutions folder: <task dir>/kernels/... (relu_rand's correct kernel only).
mkdir -p "$WORK/folder/example_relu_rand/kernels"
cp "$EX/relu_rand__correct.cpp" "$WORK/folder/example_relu_rand/kernels/relu.cpp"
grep '"id":"example/relu_rand"' "$EX/tasks.jsonl" >"$WORK/relu.jsonl"
run "$CA_BIN/ca-eval" run --suite "$WORK/relu.jsonl" --solutions "$WORK/folder" --no-compile
expect_code 0
expect_stdout '"verdict":"PASS"'
finish
