#!/usr/bin/env bash
# An episode whose judgement could not run is written with an error, and --resume runs it again: the first run's
# ca-rollout has no ca-verify beside it (its judge cannot start), the resume is the real one. The resumed output holds
# one record per episode, each judged; the episode that was judged the first time is not run again.
source "$(dirname "$0")/lib.bash"
EX="$CA_SOURCE_DIR/examples/candidates/cpu"
grep -E '"example/(relu_rand|linear_leaky_relu)"' "$EX/tasks.jsonl" >"$WORK/tasks.jsonl"
python3 "$CA_SOURCE_DIR/tests/cli/rollout_replay_files.py" '*' --no-checks "$EX/relu_rand__calls_torch.cpp" >"$WORK/replay.jsonl"
flags=(--policy "replay:$WORK/replay.jsonl" --no-final-profile --workdir "$WORK/ws" "$WORK/tasks.jsonl"
  -o "$WORK/out.jsonl")

# One episode judged by the real tools, so the file holds a good record beside the failed one.
head -1 "$WORK/tasks.jsonl" >"$WORK/first.jsonl"
run "$CA_BIN/ca-rollout" --policy "replay:$WORK/replay.jsonl" --no-final-profile --workdir "$WORK/ws" \
  "$WORK/first.jsonl" -o "$WORK/out.jsonl"
expect_code 0
mkdir -p "$WORK/lonely" && cp "$CA_BIN/ca-rollout" "$WORK/lonely/"
run "$WORK/lonely/ca-rollout" "${flags[@]}" --resume
expect_code 1
expect_stderr "judge: cannot run ca-verify"
python3 - "$WORK/out.jsonl" <<'PY' || fail "the first runs' records"
import json, sys
records = [json.loads(l) for l in open(sys.argv[1])]
assert [r["error"] is None for r in records] == [True, False], [r["error"] for r in records]
PY
first=$(head -1 "$WORK/out.jsonl")

run "$CA_BIN/ca-rollout" "${flags[@]}" --resume
expect_code 0
expect_stderr "1 episodes with an error in $WORK/out.jsonl run again"
expect_stderr "1 of 1 episodes written, 1 done before"
[ "$(head -1 "$WORK/out.jsonl")" = "$first" ] || fail "the judged episode's record changed"
python3 - "$WORK/out.jsonl" "$WORK/tasks.jsonl" <<'PY' || fail "the resumed output"
import json, sys
records = [json.loads(l) for l in open(sys.argv[1])]
tasks = {json.loads(l)["id"] for l in open(sys.argv[2])}
assert sorted(r["task_id"] for r in records) == sorted(tasks), [r["task_id"] for r in records]
for r in records:
    assert r["error"] is None and r["reward"]["value"] == -1, (r["task_id"], r["error"], r.get("reward"))
PY
finish
