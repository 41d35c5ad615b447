#!/usr/bin/env bash
# SIGINT stops ca-rollout cleanly: the episode in flight (a bash call that would
# run for an hour in the sandbox) is killed and not written, so --resume would
# run it again; the exit status is 130 and nothing is left running.
source "$(dirname "$0")/lib.bash"
grep '"example/relu_rand"' "$CA_SOURCE_DIR/examples/candidates/cpu/tasks.jsonl" >"$WORK/tasks.jsonl"
python3 - >"$WORK/replay.jsonl" <<'PY'
import json
call = {"id": "c0", "type": "function", "function": {"name": "bash", "arguments": json.dumps({"command": "touch kernels/started; exec sleep 3599.123"})}}
print(json.dumps({"kind": "trajectory", "messages": [{"role": "assistant", "content": None, "tool_calls": [call]}]}))
PY
"$CA_BIN/ca-rollout" --policy "replay:$WORK/replay.jsonl" --bash-timeout 7200 --workdir "$WORK/ws" "$WORK/tasks.jsonl" \
  -o "$WORK/out.jsonl" 2>"$WORK/stderr" &
pid=$!
until [ -e "$WORK/ws/example_relu_rand-s0/kernels/started" ] || ! kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
kill -INT "$pid"
wait "$pid"
code=$?
expect_code 130
[ ! -s "$WORK/out.jsonl" ] || fail "an interrupted episode was written"
# The sandbox dies with its supervisor, a moment after it: wait for that state (30 s at most, then fail).
for _ in $(seq 300); do pgrep -f "sleep 3599.123" >/dev/null || break; sleep 0.1; done
pgrep -f "sleep 3599.123" >/dev/null && fail "the sandboxed command survived"
finish
