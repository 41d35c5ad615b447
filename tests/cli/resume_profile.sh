#!/usr/bin/env bash
# ca-profile keeps the profiles it finished (util/journal.h): a run killed with SIGKILL after one of three
# candidates, resumed with --resume, gives the records an uninterrupted run gives, in order, none twice or lost
# (timings aside: the resumed records are measured anew). A resume with another --rounds, or with a --tasks file
# changed since, is refused (64); a completed run leaves no journal.
source "$(dirname "$0")/lib.bash"
source "$(dirname "$0")/resume.bash"
EX=$CA_SOURCE_DIR/examples/candidates/cpu
export CA_LOCK_DIR=$WORK
cp "$EX/tasks.jsonl" "$WORK/tasks.jsonl"
profile=("$CA_BIN/ca-profile" --tasks "$WORK/tasks.jsonl" --timeout 20 --min-ms 1 --rounds 1 --no-compile --threads 1 --seed 7)
{
  grep -F '"id":"cpu/relu_rand__correct"' "$EX/candidates.jsonl"
  grep -F '"id":"cpu/relu_rand__calls_torch"' "$EX/candidates.jsonl"
  grep -F '"id":"cpu/relu_rand__identity"' "$EX/candidates.jsonl"
} >"$WORK/candidates.jsonl"
[ "$(wc -l <"$WORK/candidates.jsonl")" -eq 3 ] || fail "the example candidates changed"

run "${profile[@]}" -o "$WORK/full.jsonl" <"$WORK/candidates.jsonl"
full_code=$code
[ -e "$WORK/full.jsonl.journal" ] && fail "a completed run left its journal"

killed_run 1 "$WORK/candidates.jsonl" "$WORK/out.jsonl" "${profile[@]}" -o "$WORK/out.jsonl"
run "${profile[@]}" --rounds 2 -o "$WORK/out.jsonl" --resume <"$WORK/candidates.jsonl"
expect_code 64
expect_stderr "is of another run (--rounds was"
echo >>"$WORK/tasks.jsonl"
run "${profile[@]}" -o "$WORK/out.jsonl" --resume <"$WORK/candidates.jsonl"
expect_code 64
expect_stderr "tasks.jsonl changed since"
cp "$EX/tasks.jsonl" "$WORK/tasks.jsonl"
run "${profile[@]}" -o "$WORK/out.jsonl" --resume <"$WORK/candidates.jsonl"
expect_code "$full_code"
expect_stderr "resuming: 1 finished records in"
same_records "$WORK/full.jsonl" "$WORK/out.jsonl"
[ -e "$WORK/out.jsonl.journal" ] && fail "a resumed run left its journal"
finish
