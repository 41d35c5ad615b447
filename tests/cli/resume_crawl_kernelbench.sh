#!/usr/bin/env bash
# `ca-crawl kernelbench` keeps the problems it finished (util/journal.h) as the bridge streams them: a run killed
# with SIGKILL after two of three problems (the third waits on a gate this test holds), resumed with --resume,
# gives the tasks and digest records an uninterrupted run gives, in order, none twice or lost, and the bridge is
# told to skip the two (it gives only their place). A resume with another --scale, or with a problem file changed
# since, is refused (64); a completed run leaves no journal.
source "$(dirname "$0")/lib.bash"
source "$(dirname "$0")/resume.bash"
crawl=$CA_BIN/ca-crawl
mkdir -p "$WORK/level1" "$WORK/full" "$WORK/out"
cp "$CA_SOURCE_DIR"/examples/kernelbench/level1/*.py "$WORK/level1/"
# The third problem's module-level code reads the gate: a FIFO holds it until the test opens the FIFO for writing.
cat >"$WORK/level1/3_Gated_relu.py" <<'PY'
import os
import torch
import torch.nn as nn

_ = open(os.environ.get("CA_TEST_GATE", os.devnull)).read()


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(64, 64)]


def get_init_inputs():
    return []
PY
flags=(kernelbench "$WORK/level1" --scale 4 --params-dir "$WORK/params")

run "$crawl" "${flags[@]}" -o "$WORK/full/tasks.jsonl" --digests "$WORK/full_digests.jsonl"
expect_code 0
expect_stderr "imported 3 of 3"
[ -e "$WORK/full/tasks.jsonl.journal" ] && fail "a completed run left its journal"

mkfifo "$WORK/gate"
CA_TEST_GATE=$WORK/gate "$crawl" "${flags[@]}" -o "$WORK/out/tasks.jsonl" --digests "$WORK/digests.jsonl" \
  2>"$WORK/killed.err" &
pid=$!
until [ "$(journal_entries "$WORK/out/tasks.jsonl")" -ge 2 ]; do
  kill -0 "$pid" 2>/dev/null || { fail "the run ended before two problems: $(tail -2 "$WORK/killed.err")"; break; }
  sleep 0.05  # a poll: what ends the loop is the journal's state
done
kill -9 "$pid"
wait "$pid" 2>/dev/null
: >"$WORK/gate"  # lets the orphaned bridge go on, to a closed pipe
[ -e "$WORK/out/tasks.jsonl" ] && fail "a killed run left its output"
[ -e "$WORK/digests.jsonl" ] && fail "a killed run left its digests"

run "$crawl" "${flags[@]}" --scale 8 -o "$WORK/out/tasks.jsonl" --digests "$WORK/digests.jsonl" --resume
expect_code 64
expect_stderr "kernelbench --scale was \"4\", now \"8\""
cp "$WORK/level1/2_Symmetric_max.py" "$WORK/saved.py"
echo "# changed" >>"$WORK/level1/2_Symmetric_max.py"
run "$crawl" "${flags[@]}" -o "$WORK/out/tasks.jsonl" --digests "$WORK/digests.jsonl" --resume
expect_code 64
expect_stderr "2_Symmetric_max.py: --resume: this record differs from the one"
cp "$WORK/saved.py" "$WORK/level1/2_Symmetric_max.py"

run "$crawl" "${flags[@]}" -o "$WORK/out/tasks.jsonl" --digests "$WORK/digests.jsonl" --resume
expect_code 0
expect_stderr "resuming: 2 finished records in"
expect_stderr "imported 3 of 3"
same_records "$WORK/full/tasks.jsonl" "$WORK/out/tasks.jsonl"
same_records "$WORK/full_digests.jsonl" "$WORK/digests.jsonl"
[ -e "$WORK/out/tasks.jsonl.journal" ] && fail "a resumed run left its journal"
[ -e "$WORK/out/tasks.jsonl.journal.skip" ] && fail "a resumed run left its skip list"
finish
