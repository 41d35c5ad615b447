#!/usr/bin/env bash
# ca-filter keeps what it judged (util/journal.h): a run killed with SIGKILL after one task, resumed and killed
# again after three, then resumed to the end, keeps and rejects what an uninterrupted run does, in order, none twice
# or lost; the duplicate (task 2) and the near-duplicate (task 4) are still caught after the kills, from what the
# journal holds of tasks 1 and 3. A resume with another flag is refused (64); a completed run leaves no journal.
source "$(dirname "$0")/lib.bash"
source "$(dirname "$0")/resume.bash"
tasks=$CA_SOURCE_DIR/examples/filter/tasks.jsonl
export CA_LOCK_DIR=$WORK  # the cpu lease, of this test alone
filter=("$CA_BIN/ca-filter" --min-ms 0 --reference "$CA_SOURCE_DIR/examples/filter/reference.jsonl")

run "${filter[@]}" --rejects "$WORK/full_rejects.jsonl" -o "$WORK/full.jsonl" <"$tasks"
expect_code 0
[ -e "$WORK/full.jsonl.journal" ] && fail "a completed run left its journal"

killed_run 1 "$tasks" "$WORK/kept.jsonl" "${filter[@]}" --rejects "$WORK/rejects.jsonl" -o "$WORK/kept.jsonl"
[ -e "$WORK/rejects.jsonl" ] && fail "a killed run left its rejects"
run "${filter[@]}" --max-ms 5000 --rejects "$WORK/rejects.jsonl" -o "$WORK/kept.jsonl" --resume <"$tasks"
expect_code 64
expect_stderr "is of another run (--max-ms was"
killed_run 3 "$tasks" "$WORK/kept.jsonl" "${filter[@]}" --rejects "$WORK/rejects.jsonl" -o "$WORK/kept.jsonl" --resume
run "${filter[@]}" --rejects "$WORK/rejects.jsonl" -o "$WORK/kept.jsonl" --resume <"$tasks"
expect_code 0
expect_stderr "resuming: 3 finished records in"
expect_stderr "ca-filter: note: kept 2 of 14; rejected: eager-error 1, random-op 1, duplicate 1, contaminated 1"
same_records "$WORK/full.jsonl" "$WORK/kept.jsonl"
same_records "$WORK/full_rejects.jsonl" "$WORK/rejects.jsonl"
[ -e "$WORK/kept.jsonl.journal" ] && fail "a resumed run left its journal"
finish
