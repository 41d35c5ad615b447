#!/usr/bin/env bash
# A run killed with SIGKILL leaves its output's temporary (OUT.tmp-PID-XXXXXX, util/atomic_file.h) beside it; the next
# run that writes OUT, with --resume or after the journal is removed without it, removes the temporaries whose process
# is gone, and keeps those of a live writer (its pid alive) and of other outputs.
source "$(dirname "$0")/lib.bash"
synth=("$CA_BIN/ca-synth" --cost-model cpu --target-ms 0.05 -n 4 --seed 5)
"$CA_BIN/ca-crawl" ops --usable >"$WORK/ops.jsonl" || fail "ca-crawl ops"

# killed OUT: a ca-synth run writing OUT, killed with SIGKILL once its journal holds two tasks.
killed() {
  CA_JOURNAL_KILL_AFTER=2 "${synth[@]}" -o "$1" "$WORK/ops.jsonl" 2>"$WORK/killed.err"
  local code=$?
  [ "$code" -eq 137 ] || fail "the run was to be killed at its second task, exit $code"
  ls "$1".tmp-[0-9]*-* >/dev/null 2>&1 || fail "the killed run left no temporary beside $1"
}

killed "$WORK/out.jsonl"
stale=$(ls "$WORK"/out.jsonl.tmp-*)
echo partial >"$WORK/out.jsonl.tmp-$$-live00"  # this shell's: alive
echo partial >"$WORK/other.jsonl.tmp-999999999-abcdef"
run "${synth[@]}" -o "$WORK/out.jsonl" --resume "$WORK/ops.jsonl"
expect_code 0
[ -e "$stale" ] && fail "the resumed run kept the killed run's temporary $stale"
[ -e "$WORK/out.jsonl.tmp-$$-live00" ] || fail "the run removed a live writer's temporary"
[ -e "$WORK/other.jsonl.tmp-999999999-abcdef" ] || fail "the run removed another output's temporary"
[ "$(ls "$WORK" | grep -c '^out\.jsonl\.tmp-')" -eq 1 ] || fail "temporaries left: $(ls "$WORK")"

killed "$WORK/again.jsonl"
rm "$WORK/again.jsonl.journal"
run "${synth[@]}" -o "$WORK/again.jsonl" "$WORK/ops.jsonl"
expect_code 0
ls "$WORK"/again.jsonl.tmp-* >/dev/null 2>&1 && fail "a run without --resume kept the killed run's temporary"
cmp -s "$WORK/out.jsonl" "$WORK/again.jsonl" || fail "the two runs wrote other tasks"
finish
