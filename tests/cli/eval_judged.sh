#!/usr/bin/env bash
# ca-eval run --judged, report and compare on hand-made judged records (no timing): a task with no solution counts
# as failed, a degenerate task is reported apart, and every printed metric matches its hand computation.
source "$(dirname "$0")/lib.bash"
EVAL="$CA_BIN/ca-eval"

cat >"$WORK/suite.jsonl" <<'JSON'
{"kind":"task","id":"a","level":1}
{"kind":"task","id":"b","level":1}
{"kind":"task","id":"c","level":2}
{"kind":"task","id":"d","level":2}
{"kind":"task","id":"degen","level":1}
JSON
cat >"$WORK/judged.jsonl" <<'JSON'
{"kind":"candidate","task_id":"a","verify":{"ok":true,"stage":"","tolerance":{"atol":0.01,"rtol":0.01}},"profile":{"ok":true,"device":"cpu Test CPU","backend":"cpu","method":"test clock","precision":"fp32","times_us":{"candidate":50,"eager":200,"compile":100},"speedup":{"vs_eager":4.0,"vs_compile":2.0}},"reward":{"value":3}}
{"kind":"candidate","task_id":"b","verify":{"ok":false,"stage":"compare"},"profile":{"ok":false,"skipped":"verification failed"},"reward":{"value":-1}}
{"kind":"candidate","task_id":"c","verify":{"ok":true,"stage":""},"profile":{"ok":true,"times_us":{"candidate":100,"eager":100,"compile":50},"speedup":{"vs_eager":1.0,"vs_compile":0.5}},"reward":{"value":1}}
{"kind":"candidate","task_id":"degen","verify":{"ok":true,"stage":""},"profile":{"ok":true,"speedup":{"vs_eager":100,"vs_compile":100}},"reward":{"value":3}}
JSON
echo '{"kind":"task","id":"degen","reject":{"reason":"constant-output","detail":"x"}}' >"$WORK/rejects.jsonl"

run "$EVAL" --help
expect_code 0
expect_stdout "report"

run "$EVAL" run --suite "$WORK/suite.jsonl" --judged "$WORK/judged.jsonl" --rejects "$WORK/rejects.jsonl" -o "$WORK/a.jsonl"
expect_code 0
python3 - "$WORK/a.jsonl" <<'PY' || fail "metrics differ from the hand computation"
import json, math, sys
records = [json.loads(l) for l in open(sys.argv[1])]
tasks = {r["task_id"]: r for r in records if r["kind"] == "eval_task"}
summary = records[-1]
assert summary["kind"] == "eval_summary"
assert tasks["d"]["verdict"] == "MISSING" and tasks["d"]["stage"] == "missing", tasks["d"]
assert tasks["degen"]["degenerate"] == "constant-output"
o = summary["overall"]
assert o["tasks"] == 4 and o["passed"] == 2, o            # a, c pass; b fails; d has no solution; degen apart
assert o["pass_rate"] == 0.5
assert o["fast_p"]["vs_eager"]["1"] == 0.25              # only a (4.0 > 1); c's 1.0 is not > 1
assert o["fast_p"]["vs_eager"]["0"] == 0.5
assert o["fast_p"]["vs_compile"]["1.5"] == 0.25 and o["fast_p"]["vs_compile"]["2"] == 0.0
assert o["faster_than_compile"] == 0.25
assert abs(o["geomean_speedup_passing"]["vs_eager"] - 2.0) < 1e-12          # sqrt(4 * 1)
assert abs(o["geomean_speedup_failures_as_1"]["vs_eager"] - 4 ** 0.25) < 1e-12
assert abs(o["geomean_speedup_passing"]["vs_compile"] - 1.0) < 1e-12        # sqrt(2 * 0.5)
assert summary["levels"]["1"]["tasks"] == 2 and summary["levels"]["2"]["tasks"] == 2
assert summary["degenerate"]["tasks"] == 1
env = summary["environment"]
assert env["hardware"] == "cpu Test CPU" and env["timing_method"] == "test clock" and env["precision"] == "fp32", env
assert env["tolerance"] == {"atol": 0.01, "rtol": 0.01} and "torch" in env and "driver" in env
PY

run "$EVAL" report "$WORK/a.jsonl" -o "$WORK/report"
expect_code 0
grep -q "| pass rate | 50.0% | 50.0% | 50.0% | 100.0% |" "$WORK/report/report.md" || fail "report.md lacks the pass-rate row"
[ "$(grep -o '<svg' "$WORK/report/report.html" | wc -l)" -eq 4 ] || fail "report.html does not have 4 SVG plots"
grep -q 'src=\|href="http' "$WORK/report/report.html" && fail "report.html refers to an external resource"

# Run B: b now passes; compare names it and the pass-rate delta.
sed 's/"task_id":"b","verify":{"ok":false,"stage":"compare"},"profile":{"ok":false,"skipped":"verification failed"},"reward":{"value":-1}/"task_id":"b","verify":{"ok":true},"reward":{"value":1}/' \
  "$WORK/judged.jsonl" >"$WORK/judged_b.jsonl"
run "$EVAL" run --suite "$WORK/suite.jsonl" --judged "$WORK/judged_b.jsonl" --rejects "$WORK/rejects.jsonl" -o "$WORK/b.jsonl"
expect_code 0
run "$EVAL" compare "$WORK/a.jsonl" "$WORK/b.jsonl"
expect_code 0
expect_stdout "| pass rate | 50.0% | 75.0% | +25.0 pt |"
expect_stdout "Tasks whose verdict changed: 1"
expect_stdout "| b | FAIL (compare) | PASS |"

# Failure paths.
run "$EVAL" run --suite "$WORK/suite.jsonl"
expect_code 64
run "$EVAL" run --suite "$WORK/suite.jsonl" --judged "$WORK/judged.jsonl" --policy builtin
expect_code 64
run "$EVAL" --bogus
expect_code 64
run "$EVAL" run --suite "$WORK/nope.jsonl" --judged "$WORK/judged.jsonl"
expect_code 66
expect_stderr "nope.jsonl"
printf '{"task_id":"a"}\n' >"$WORK/noverdict.jsonl"
run "$EVAL" run --suite "$WORK/suite.jsonl" --judged "$WORK/noverdict.jsonl" -o "$WORK/bad.jsonl"
expect_code 65
expect_stderr "verify"
[ ! -e "$WORK/bad.jsonl" ] || fail "a failed run left its output"
printf '{"kind":"eval_task","task_id":"a","verdict":"PASS"}\n' >"$WORK/nosummary.jsonl"
run "$EVAL" report "$WORK/nosummary.jsonl" -o "$WORK/r2"
expect_code 65
expect_stderr "no eval_summary"
finish
