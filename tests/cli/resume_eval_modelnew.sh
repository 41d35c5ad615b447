#!/usr/bin/env bash
# ca-eval run --modelnew keeps every problem it judged in its journal (util/journal.h): killed with SIGKILL once the
# journal holds three problems (CA_JOURNAL_KILL_AFTER), then resumed with --resume, it judges only the rest and writes
# the verdicts of an uninterrupted run (timings aside), each problem once; a solution changed since is refused (64).
source "$(dirname "$0")/lib.bash"
source "$(dirname "$0")/resume.bash"
EX="$CA_SOURCE_DIR/examples/kernelbench_solutions"
command -v bwrap >/dev/null || { echo "SKIP: no bwrap"; exit 77; }
export CA_PYTHON=$(torch_python) || { echo "SKIP: no python with torch"; exit 77; }

run "$CA_BIN/ca-crawl" kernelbench "$EX/level1" --params-dir "$WORK/params" -o "$WORK/tasks.jsonl"
expect_code 0
cp -r "$EX/solutions" "$WORK/solutions"
eval_run=("$CA_BIN/ca-eval" run --suite "$WORK/tasks.jsonl" --modelnew "$WORK/solutions" --no-compile --trials 2
  --timed-calls 2)
run "${eval_run[@]}" -o "$WORK/full.jsonl"
expect_code 0
problems=$(grep -c '"kind":"eval_task"' "$WORK/full.jsonl")
[ "$problems" -gt 3 ] || fail "expected more than 3 problems, got $problems"

run env CA_JOURNAL_KILL_AFTER=3 "${eval_run[@]}" -o "$WORK/out.jsonl"
expect_code 137
[ -e "$WORK/out.jsonl" ] && fail "a killed run left its output"
[ "$(journal_entries "$WORK/out.jsonl")" -eq 3 ] || fail "the journal holds $(journal_entries "$WORK/out.jsonl") problems"

# The solutions changed since: the resume must not take the old verdicts.
cp -r "$WORK/solutions" "$WORK/solutions.kept"
for f in "$WORK"/solutions/*.py; do echo "# changed" >>"$f"; done
run "${eval_run[@]}" -o "$WORK/out.jsonl" --resume
expect_code 64
expect_stderr "differs from the one $WORK/out.jsonl.journal journaled here"
rm -r "$WORK/solutions" && mv "$WORK/solutions.kept" "$WORK/solutions"

run "${eval_run[@]}" -o "$WORK/out.jsonl" --resume
expect_code 0
expect_stderr "resuming: 3 finished records in $WORK/out.jsonl.journal"
python3 - "$WORK/full.jsonl" "$WORK/out.jsonl" <<'PY' || fail "the resumed run's results differ"
import json, sys
a, b = ([json.loads(line) for line in open(path)] for path in sys.argv[1:3])
assert len(a) == len(b), (len(a), len(b))
for x, y in zip(a, b):
    for key in ("kind", "task_id", "verdict", "samples"):
        assert x.get(key) == y.get(key), (key, x.get(key), y.get(key))
for key in ("tasks", "passed", "pass_rate"):
    assert a[-1]["overall"][key] == b[-1]["overall"][key], key
PY
[ -e "$WORK/out.jsonl.journal" ] && fail "a resumed run left its journal"
finish
