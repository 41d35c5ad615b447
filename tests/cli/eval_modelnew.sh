#!/usr/bin/env bash
# ca-eval run --modelnew: KernelBench-format solutions (examples/kernelbench_solutions: a load_inline C++ one, plain
# torch ones, known-bad ones) judged in the sandbox against their problems, imported with ca-crawl kernelbench; each
# verdict of this harness and of KernelBench's own check must be the one examples/kernelbench_solutions/EXPECTED
# gives, the metrics must follow from the per-task records, and the report must list the disagreements.
source "$(dirname "$0")/lib.bash"
EX="$CA_SOURCE_DIR/examples/kernelbench_solutions"
command -v bwrap >/dev/null || { echo "SKIP: no bwrap"; exit 77; }
export CA_PYTHON=$(torch_python) || { echo "SKIP: no python with torch"; exit 77; }

run "$CA_BIN/ca-crawl" kernelbench "$EX/level1" --params-dir "$WORK/params" -o "$WORK/tasks.jsonl"
expect_code 0
run "$CA_BIN/ca-eval" run --suite "$WORK/tasks.jsonl" --modelnew "$EX/solutions" --no-compile --trials 8 \
  --timed-calls 5 --workdir "$WORK/work" -o "$WORK/results.jsonl"
expect_code 0
python3 - "$WORK/results.jsonl" "$EX/EXPECTED" <<'PY' || fail "verdicts differ from EXPECTED or metrics from the records"
import json, math, sys
records = [json.loads(l) for l in open(sys.argv[1])]
tasks = {r["task_id"].removeprefix("kernelbench-level1-"): r for r in records if r["kind"] == "eval_task"}
expected = {}
for line in open(sys.argv[2]):
    if line.startswith("#") or not line.strip():
        continue
    words = line.split()
    name, verdict = words[0], words[1]
    stage = words[2].strip("()") if words[2].startswith("(") else ""
    kernelbench = words[3] if stage else words[2]
    expected[name] = (verdict, stage, kernelbench)
assert set(tasks) == set(expected), (sorted(tasks), sorted(expected))
for name, (verdict, stage, kernelbench) in expected.items():
    task = tasks[name]
    got = (task["verdict"], task["stage"] if verdict == "FAIL" else "", task.get("kernelbench", "-"))
    assert got == (verdict, stage, kernelbench), (name, got, (verdict, stage, kernelbench))
    if verdict == "PASS":
        v = task["speedup"]["vs_eager"]
        assert v > 0 and abs(v - task["times_us"]["eager"] / task["times_us"]["candidate"]) < 1e-9 * v, task
        assert task["reward"] >= 1, task
    elif verdict == "FAIL":
        assert task["reward"] == -1, task
o = records[-1]["overall"]
passing = [t for t in tasks.values() if t["verdict"] == "PASS"]
assert o["tasks"] == 9 and o["passed"] == len(passing) == 3 and abs(o["pass_rate"] - 3 / 9) < 1e-12, o
speedups = [t["speedup"]["vs_eager"] for t in passing]
assert abs(o["geomean_speedup_failures_as_1"]["vs_eager"] - math.prod(speedups) ** (1 / 9)) < 1e-9
for p, got in o["fast_p"]["vs_eager"].items():
    assert abs(got - sum(v > float(p) for v in speedups) / 9) < 1e-12, (p, got)
assert records[-1]["source"].startswith("modelnew "), records[-1]["source"]
PY
# The judge's records: the seeds never reach the sandbox, so they are recorded after the run.
grep -q '"salt"' "$WORK/work/modelnew/judged.jsonl" || fail "no seeds recorded"

run "$CA_BIN/ca-eval" report "$WORK/results.jsonl" -o "$WORK/report"
expect_code 0
grep -qF "Where this harness and KernelBench's check disagree: 2 solution(s)" "$WORK/report/report.md" ||
  fail "report.md: no disagreement section with 2 solutions"
grep -qF "| kernelbench-level1-4_GELU | FAIL (profile) | PASS |" "$WORK/report/report.md" ||
  fail "report.md: GELU's disagreement not listed"
grep -qF "KernelBench eval" "$WORK/report/report.html" || fail "report.html: no KernelBench column"

# Failure paths: a folder that does not exist; --modelnew with --solutions.
run "$CA_BIN/ca-eval" run --suite "$WORK/tasks.jsonl" --modelnew "$WORK/nowhere"
expect_code 74
expect_stderr "not a directory"
run "$CA_BIN/ca-eval" run --suite "$WORK/tasks.jsonl" --modelnew "$EX/solutions" --solutions "$WORK/tasks.jsonl"
expect_code 64
finish
