#!/usr/bin/env bash
# ca-synth keeps the tasks it composed (util/journal.h): a run killed with SIGKILL once its journal holds three of
# eight tasks (CA_JOURNAL_KILL_AFTER, the journal's kill point: the grammar reads no input it could be held at),
# resumed with --resume, writes the bytes an uninterrupted run with its --seed writes: each task draws from its own
# random source (seed, index), so skipping finished ones changes nothing. A resume over other op records (on stdin,
# whose header has no digest), with another --seed, or without --resume is refused (64); a completed run leaves no
# journal.
source "$(dirname "$0")/lib.bash"
source "$(dirname "$0")/resume.bash"
synth=("$CA_BIN/ca-synth" --cost-model cpu --target-ms 0.05 -n 8 --seed 5)
"$CA_BIN/ca-crawl" ops --usable >"$WORK/ops.jsonl" || fail "ca-crawl ops"

run "${synth[@]}" -o "$WORK/full.jsonl" "$WORK/ops.jsonl"
expect_code 0
[ "$(wc -l <"$WORK/full.jsonl")" -eq 8 ] || fail "expected 8 tasks"
[ -e "$WORK/full.jsonl.journal" ] && fail "a completed run left its journal"

CA_JOURNAL_KILL_AFTER=3 "${synth[@]}" -o "$WORK/out.jsonl" - <"$WORK/ops.jsonl" 2>"$WORK/killed.err"
code=$?
[ "$code" -eq 137 ] || fail "the run was to be killed at its third task, exit $code: $(tail -2 "$WORK/killed.err")"
[ -e "$WORK/out.jsonl" ] && fail "a killed run left its output"
[ "$(journal_entries "$WORK/out.jsonl")" -eq 3 ] || fail "the journal holds $(journal_entries "$WORK/out.jsonl") tasks"

run "${synth[@]}" -o "$WORK/out.jsonl" - <"$WORK/ops.jsonl"
expect_code 64
expect_stderr "pass --resume to carry on"
run "${synth[@]}" --seed 6 -o "$WORK/out.jsonl" --resume - <"$WORK/ops.jsonl"
expect_code 64
expect_stderr "is of another run (--seed was \"5\", now \"6\")"
run "${synth[@]}" -o "$WORK/out.jsonl" --resume - < <(head -n -1 "$WORK/ops.jsonl")
expect_code 64
expect_stderr "differs from the one $WORK/out.jsonl.journal journaled here"

run "${synth[@]}" -o "$WORK/out.jsonl" --resume - <"$WORK/ops.jsonl"
expect_code 0
expect_stderr "resuming: 3 finished records in $WORK/out.jsonl.journal"
expect_stderr "8 tasks in"
expect_stderr "; 3 of the tasks from the journal"
cmp -s "$WORK/full.jsonl" "$WORK/out.jsonl" || fail "the resumed run wrote other tasks than an uninterrupted one"
[ -e "$WORK/out.jsonl.journal" ] && fail "a resumed run left its journal"

# Standard output keeps no journal, so there is nothing to resume from.
run "${synth[@]}" --resume "$WORK/ops.jsonl"
expect_code 64
expect_stderr "--resume needs an output file"
finish
