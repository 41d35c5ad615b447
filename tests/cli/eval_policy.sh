#!/usr/bin/env bash
# ca-eval run --policy: ca-rollout replays the example episode (a correct relu kernel) over a one-task suite; the
# result is the trajectory's final verdict and reward (the harness's own judgement), and --workdir keeps it.
source "$(dirname "$0")/lib.bash"
EX="$CA_SOURCE_DIR/examples/candidates/cpu/tasks.jsonl"
grep -E '"id":"example/relu_rand"' "$EX" >"$WORK/suite.jsonl"
run "$CA_BIN/ca-eval" run --suite "$WORK/suite.jsonl" --policy "replay:$CA_SOURCE_DIR/examples/trajectories/relu_rand.jsonl" \
  --no-compile --workdir "$WORK/w" -o "$WORK/results.jsonl"
expect_code 0
[ -s "$WORK/w/trajectories.jsonl" ] || fail "no trajectories kept in --workdir"
python3 - "$WORK/results.jsonl" "$WORK/w/trajectories.jsonl" <<'PY' || fail "the result is not the trajectory's final verdict"
import json, sys
records = [json.loads(l) for l in open(sys.argv[1])]
trajectory = json.loads(open(sys.argv[2]).readline())
relu = records[0]
assert relu["task_id"] == "example/relu_rand" and relu["samples"] == 1, relu
assert relu["verdict"] == ("PASS" if trajectory["verify"]["ok"] else "FAIL"), relu
assert relu["reward"] == trajectory["reward"]["value"], (relu, trajectory["reward"])
assert relu["verdict"] == "PASS" and records[-1]["overall"]["pass_rate"] == 1.0
assert records[-1]["source"].startswith("policy replay:")
PY
finish
