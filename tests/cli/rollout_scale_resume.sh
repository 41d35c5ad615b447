#!/usr/bin/env bash
# 204 episodes (replay policy, cpu backend, 6 tasks x 34 samples, -j 8): a run
# killed with SIGKILL a third of the way, then resumed with --resume, ends with
# every (task, sample) exactly once and none lost. The replayed kernel
# is refused by the static check (it includes torch), so the harness's own
# judgement is quick and every reward is -1: this tests the plumbing, not
# kernels. CA_ROLLOUT_SCALE_SAMPLES sets the samples per task (default 34).
source "$(dirname "$0")/lib.bash"
samples=${CA_ROLLOUT_SCALE_SAMPLES:-34}
EX="$CA_SOURCE_DIR/examples/candidates/cpu"
total=$((samples * $(wc -l <"$EX/tasks.jsonl")))
python3 "$CA_SOURCE_DIR/tests/cli/rollout_replay_files.py" '*' --no-checks "$EX/relu_rand__calls_torch.cpp" >"$WORK/replay.jsonl"
flags=(--policy "replay:$WORK/replay.jsonl" --samples "$samples" -j 8 --no-final-profile "$EX/tasks.jsonl")
check_journal() {  # FILE: every (task, sample) once, each judged by the harness; prints the count
  python3 - "$1" "$EX/tasks.jsonl" "$samples" <<'PY'
import json, sys
records = [json.loads(l) for l in open(sys.argv[1])]
pairs = [f"{r['task_id']}#{r['sample']}" for r in records]
assert len(pairs) == len(set(pairs)), f"{len(pairs) - len(set(pairs))} episodes twice"
want = {f"{json.loads(l)['id']}#{s}" for l in open(sys.argv[2]) for s in range(int(sys.argv[3]))}
assert set(pairs) == want, f"missing {sorted(want - set(pairs))[:5]}, extra {sorted(set(pairs) - want)[:5]}"
for r in records:
    assert r["error"] is None and r["end"]["reason"] == "finish", (r["id"], r["error"], r["end"])
    assert r["reward"]["value"] == -1 and r["verify"]["ok"] is False, (r["id"], r["reward"])
print(len(records))
PY
}

# SIGKILL once a third of the episodes are written: no clean-up at all.
"$CA_BIN/ca-rollout" "${flags[@]}" --workdir "$WORK/ws2" -o "$WORK/killed.jsonl" 2>"$WORK/killed.err" &
pid=$!
until [ "$(cat "$WORK/killed.jsonl" 2>/dev/null | wc -l)" -ge $((total / 3)) ] || ! kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
kill -9 "$pid"
wait "$pid" 2>/dev/null
before=$(wc -l <"$WORK/killed.jsonl")
[ "$before" -lt "$total" ] || fail "the run ended before the kill"
run "$CA_BIN/ca-rollout" "${flags[@]}" --workdir "$WORK/ws2" -o "$WORK/killed.jsonl" --resume
expect_code 0
expect_stderr "$((total - before)) of $((total - before)) episodes written, $before done before"
count=$(check_journal "$WORK/killed.jsonl") || fail "resumed run: $count"
[ "$count" = "$total" ] || fail "resumed run holds $count of $total episodes"
finish
