#!/usr/bin/env bash
# ca-eval run keeps what it finished (util/journal.h): every stage's records (ca-verify, ca-profile, ca-reward) in
# OUT.journal, and the tools' own journals in OUT.journal.d/. Cut short twice, by state (CA_JOURNAL_KILL_AFTER, which
# the tools it runs inherit, each counting its own entries): first ca-verify is killed after one of two candidates
# (ca-eval fails with 74 and keeps both), then the resumed ca-verify carries on from its journal and ca-eval itself is
# killed once its journal holds its three stages. The last --resume runs no tool and writes what an uninterrupted run
# writes (timings aside), none twice or lost; a completed run leaves neither journal nor folder. A run that starts
# over in a kept --workdir drops the journals its tools left there.
source "$(dirname "$0")/lib.bash"
source "$(dirname "$0")/resume.bash"
EX="$CA_SOURCE_DIR/examples/candidates/cpu"
export CA_LOCK_DIR=$WORK
grep -E '"id":"cpu/relu_rand__(correct|identity)"' "$EX/candidates.jsonl" >"$WORK/candidates.jsonl"
grep -E '"id":"example/(relu_rand|attention_rowmax)"' "$EX/tasks.jsonl" >"$WORK/suite.jsonl"
eval_run=("$CA_BIN/ca-eval" run --suite "$WORK/suite.jsonl" --solutions "$WORK/candidates.jsonl" --no-compile)

run "${eval_run[@]}" -o "$WORK/full.jsonl"
expect_code 0
[ -e "$WORK/full.jsonl.journal" ] || [ -e "$WORK/full.jsonl.journal.d" ] && fail "a completed run left its journal"

run env CA_JOURNAL_KILL_AFTER=1 "${eval_run[@]}" -o "$WORK/out.jsonl"
expect_code 74
expect_stderr "ca-verify"
[ -e "$WORK/out.jsonl" ] && fail "a run whose ca-verify was killed left its output"
[ "$(journal_entries "$WORK/out.jsonl.journal.d/verified.jsonl")" -eq 1 ] || fail "ca-verify's journal was not kept"

run "${eval_run[@]}" -o "$WORK/out.jsonl"
expect_code 64
expect_stderr "pass --resume to carry on"
run "${eval_run[@]}" --backend cuda -o "$WORK/out.jsonl" --resume
expect_code 64
expect_stderr "is of another run (run --backend was"

run env CA_JOURNAL_KILL_AFTER=3 "${eval_run[@]}" -o "$WORK/out.jsonl" --resume
expect_code 137
[ -e "$WORK/out.jsonl" ] && fail "a killed run left its output"
[ "$(journal_entries "$WORK/out.jsonl")" -eq 3 ] || fail "the journal holds $(journal_entries "$WORK/out.jsonl") stages"
[ -e "$WORK/out.jsonl.journal.d/verified.jsonl.journal" ] && fail "the resumed ca-verify left its journal"

run "${eval_run[@]}" -o "$WORK/out.jsonl" --resume
expect_code 0
expect_stderr "resuming: 3 finished records in $WORK/out.jsonl.journal"
python3 - "$WORK/full.jsonl" "$WORK/out.jsonl" <<'PY' || fail "the resumed run's results differ"
import json, sys
a, b = ([json.loads(line) for line in open(path)] for path in sys.argv[1:3])
assert len(a) == len(b) == 3, (len(a), len(b))
for x, y in zip(a, b):
    for key in ("kind", "task_id", "verdict", "samples"):
        assert x.get(key) == y.get(key), (key, x.get(key), y.get(key))
for key in ("tasks", "passed", "pass_rate"):
    assert a[-1]["overall"][key] == b[-1]["overall"][key], key
PY
[ -e "$WORK/out.jsonl.journal" ] || [ -e "$WORK/out.jsonl.journal.d" ] && fail "a resumed run left its journal"

# Starting over (the journal removed, no --resume) in a kept --workdir: the journal ca-verify left there is dropped.
run env CA_JOURNAL_KILL_AFTER=1 "${eval_run[@]}" --workdir "$WORK/kept" -o "$WORK/again.jsonl"
expect_code 74
[ -e "$WORK/kept/verified.jsonl.journal" ] || fail "ca-verify's journal was not kept in --workdir"
rm "$WORK/again.jsonl.journal"
run "${eval_run[@]}" --workdir "$WORK/kept" -o "$WORK/again.jsonl"
expect_code 0
[ -e "$WORK/kept/verified.jsonl.journal" ] && fail "the run left ca-verify's journal"
finish
