#!/usr/bin/env bash
# `ca-crawl tasks` keeps what it finished (util/journal.h): a run killed with SIGKILL after two records, resumed
# with --resume, gives the records an uninterrupted run gives, in order, none twice or lost; a resume with another
# flag or input is refused (64); a completed run leaves no journal.
source "$(dirname "$0")/lib.bash"
source "$(dirname "$0")/resume.bash"
crawl=$CA_BIN/ca-crawl
tasks=$CA_SOURCE_DIR/examples/tasks.jsonl

run "$crawl" tasks -o "$WORK/full.jsonl" <"$tasks"
expect_code 0
[ -e "$WORK/full.jsonl.journal" ] && fail "a completed run left its journal"

killed_run 2 "$tasks" "$WORK/out.jsonl" "$crawl" tasks -o "$WORK/out.jsonl"
# Without --resume the journal is not thrown away.
run "$crawl" tasks -o "$WORK/out.jsonl" <"$tasks"
expect_code 64
expect_stderr "out.jsonl.journal: a run cut short left its finished records here; pass --resume"
# Another flag, or another record where a journaled one was: refused, the journal kept.
run "$crawl" tasks --fail-fast --resume -o "$WORK/out.jsonl" <"$tasks"
expect_code 64
expect_stderr "is of another run (tasks --fail-fast was"
sed '1s/"seed":1/"seed":2/' "$tasks" >"$WORK/changed.jsonl"
run "$crawl" tasks --resume -o "$WORK/out.jsonl" <"$WORK/changed.jsonl"
expect_code 64
expect_stderr "<stdin>:1: --resume: this record differs from the one"
[ "$(journal_entries "$WORK/out.jsonl")" -eq 2 ] || fail "a refused resume changed the journal"

run "$crawl" tasks --resume -o "$WORK/out.jsonl" <"$tasks"
expect_code 0
expect_stderr "resuming: 2 finished records in"
same_records "$WORK/full.jsonl" "$WORK/out.jsonl"
[ -e "$WORK/out.jsonl.journal" ] && fail "a resumed run left its journal"

# A run stopped by --fail-fast keeps its journal too; with file inputs the journal holds their digests, so a file
# changed since is refused before any record.
{ head -n 2 "$tasks"; echo '{"kind":"task","id":"bad"}'; tail -n +3 "$tasks"; } >"$WORK/in.jsonl"
run "$crawl" tasks --fail-fast -o "$WORK/file.jsonl" "$WORK/in.jsonl"
expect_code 65
[ "$(journal_entries "$WORK/file.jsonl")" -eq 3 ] || fail "the stopped run's journal holds $(journal_entries "$WORK/file.jsonl") records, not 3"
run "$crawl" tasks --fail-fast --resume -o "$WORK/file.jsonl" "$WORK/in.jsonl"
expect_code 65
expect_stderr "in.jsonl:3: program: missing"
sed -i 3d "$WORK/in.jsonl"
run "$crawl" tasks --fail-fast --resume -o "$WORK/file.jsonl" "$WORK/in.jsonl"
expect_code 64
expect_stderr "in.jsonl changed since"
# --resume needs a file to keep the journal beside.
run "$crawl" tasks --resume <"$tasks"
expect_code 64
expect_stderr "--resume needs an output file (-o FILE)"
finish
