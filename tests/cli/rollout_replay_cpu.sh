#!/usr/bin/env bash
# ca-rollout with a replayed policy on the cpu backend: sample 0 writes a correct
# kernel and sample 1 a wrong one; both call verify, profile and finish. The
# harness's own judgement decides the rewards (>= 1 and -1), whatever the agent's
# calls said; --resume then finds nothing left, and a finished output is never
# overwritten without it.
source "$(dirname "$0")/lib.bash"
EX="$CA_SOURCE_DIR/examples/candidates/cpu"
grep '"example/relu_rand"' "$EX/tasks.jsonl" >"$WORK/tasks.jsonl"
python3 "$CA_SOURCE_DIR/tests/cli/rollout_replay_files.py" example/relu_rand \
  "$EX/relu_rand__correct.cpp" "$EX/relu_rand__identity.cpp" >"$WORK/replay.jsonl"

run "$CA_BIN/ca-rollout" --policy "replay:$WORK/replay.jsonl" --samples 2 -j 2 --no-compile "$WORK/tasks.jsonl" -o "$WORK/out.jsonl"
expect_code 0
expect_stderr "2 of 2 episodes written"
python3 - "$WORK/out.jsonl" <<'PY' || fail "trajectories"
import json, sys
records = {r["sample"]: r for r in map(json.loads, open(sys.argv[1]))}
assert sorted(records) == [0, 1], records.keys()
good, bad = records[0], records[1]
for r in (good, bad):
    assert r["kind"] == "trajectory" and r["task_id"] == "example/relu_rand" and r["error"] is None, r["error"]
    assert r["end"]["reason"] == "finish" and r["end"]["turns"] == 4, r["end"]
    assert [m["role"] for m in r["messages"]] == ["system", "user"] + ["assistant", "tool"] * 4
    assert "SKILL.md" in r["messages"][1]["content"] and "class Model" in r["messages"][1]["content"]
    assert [t["function"]["name"] for t in r["tools"]] == ["bash", "str_replace_editor", "glob", "verify", "profile", "finish"]
    assert r["kernels"]["format"] == "tar.gz+base64" and len(r["kernels"]["data"]) > 100
    assert r["policy"]["name"] == "replay"
verify_result = good["messages"][5]["content"]
assert "[PASS] compare" in verify_result, verify_result
assert "Torch Baseline:" in good["messages"][7]["content"], good["messages"][7]["content"]
assert good["reward"]["value"] in (1, 2), good["reward"]
assert good["verify"]["ok"] is True, good["verify"]
assert "[FAIL]" in bad["messages"][5]["content"], bad["messages"][5]["content"]
assert bad["reward"]["value"] == -1, bad["reward"]
PY

# Nothing left to do: the journal is untouched.
run "$CA_BIN/ca-rollout" --policy "replay:$WORK/replay.jsonl" --samples 2 "$WORK/tasks.jsonl" -o "$WORK/out.jsonl" --resume
expect_code 0
expect_stderr "0 of 0 episodes written, 2 done before"
[ "$(wc -l <"$WORK/out.jsonl")" -eq 2 ] || fail "resume changed the journal"

run "$CA_BIN/ca-rollout" --policy "replay:$WORK/replay.jsonl" "$WORK/tasks.jsonl" -o "$WORK/out.jsonl"
expect_code 64
expect_stderr "pass --resume"

run "$CA_BIN/ca-rollout" --policy "replai:x" "$WORK/tasks.jsonl"
expect_code 64
expect_stderr "expected openai:URL, replay:FILE, builtin or local:CKPT"

run "$CA_BIN/ca-rollout" --policy "local:$WORK/ckpt" "$WORK/tasks.jsonl"
expect_code 66
expect_stderr "local:$WORK/ckpt: "
finish
