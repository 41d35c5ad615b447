#!/usr/bin/env bash
# ca-verify keeps the verdicts it finished (util/journal.h): a run killed with SIGKILL after two of four candidates,
# resumed with --resume (at -j 2: order is input order whatever -j), gives the verdicts an uninterrupted run gives,
# in order, none twice or lost; a candidate the harness cannot judge is journaled as its error and reported again.
# A resume with another --trials is refused (64); a completed run leaves no journal.
source "$(dirname "$0")/lib.bash"
source "$(dirname "$0")/resume.bash"
EX=$CA_SOURCE_DIR/examples/candidates/cpu
export CA_LOCK_DIR=$WORK
verify=("$CA_BIN/ca-verify" --tasks "$EX/tasks.jsonl" --timeout 10 --seed 7)
{
  grep -F '"id":"cpu/relu_rand__correct"' "$EX/candidates.jsonl"
  grep -F '"id":"cpu/relu_rand__calls_torch"' "$EX/candidates.jsonl"
  echo '{"kind":"candidate","id":"orphan","task_id":"no/such/task","files":{"kernels/k.cpp":""}}'
  grep -F '"id":"cpu/relu_rand__identity"' "$EX/candidates.jsonl"
} >"$WORK/candidates.jsonl"
[ "$(wc -l <"$WORK/candidates.jsonl")" -eq 4 ] || fail "the example candidates changed"

run "${verify[@]}" -o "$WORK/full.jsonl" <"$WORK/candidates.jsonl"
expect_code 1
expect_stderr "<stdin>:3: task_id: no task 'no/such/task'"
[ -e "$WORK/full.jsonl.journal" ] && fail "a completed run left its journal"

killed_run 3 "$WORK/candidates.jsonl" "$WORK/out.jsonl" "${verify[@]}" -o "$WORK/out.jsonl"
run "${verify[@]}" --trials 2 -o "$WORK/out.jsonl" --resume <"$WORK/candidates.jsonl"
expect_code 64
expect_stderr "is of another run (--trials was"
run "${verify[@]}" -j 2 -o "$WORK/out.jsonl" --resume <"$WORK/candidates.jsonl"
expect_code 1
expect_stderr "resuming: 3 finished records in"
expect_stderr "<stdin>:3: task_id: no task 'no/such/task'"
same_records "$WORK/full.jsonl" "$WORK/out.jsonl"
[ -e "$WORK/out.jsonl.journal" ] && fail "a resumed run left its journal"
finish
