# The warm judge's failure paths: a malformed request gets an answer that says so (and the judge goes on); a
# missing workspace the cold tool's exit and message; a live socket is not taken over, a stale one (its judge
# killed) is; two clients at once are both answered; a judge that dies while a request waits (here for the device's
# lease) leaves its client with exit 69, not a hang; ca-rollout --judge answers the agent's verify through the
# judge, and through the cold tool (the same text) when the judge is gone.
. "$(dirname "$0")/lib.bash"
export CA_LOCK_DIR=$WORK CA_CACHE_DIR=$WORK/cache
dir=$CA_SOURCE_DIR/examples/candidates/cpu
sock=$WORK/judge.sock
grep '"example/relu_rand"' "$dir/tasks.jsonl" >"$WORK/tasks.jsonl"
"$CA_BIN/ca-sandbox" create --backend cpu --dir "$WORK/ws" "$WORK/tasks.jsonl" -q >/dev/null || fail "no workspace"
ws=$WORK/ws/example_relu_rand
cp "$dir/relu_rand__correct.cpp" "$ws/kernels/relu.cpp"

start_judge() {  # start_judge: a judge on $sock, its pid in $judge, once it listens
  rm -f "$WORK/serve_out"  # an earlier judge's line must not pass for this one's (the redirect truncates late)
  "$CA_BIN/ca-judge" -j 2 serve --socket "$sock" --timeout 20 >"$WORK/serve_out" 2>"$WORK/serve_err" 9>&- &
  judge=$!
  until grep -q "listening on" "$WORK/serve_out" 2>/dev/null || ! kill -0 "$judge" 2>/dev/null; do sleep 0.05; done
  grep -q "listening on $sock" "$WORK/serve_out" || fail "ca-judge serve did not start: $(head -3 "$WORK/serve_err")"
}
ask_raw() {  # ask_raw LINE: the judge's answer line to LINE, sent as is
  python3 - "$sock" "$1" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(sys.argv[2].encode() + b"\n")
data = b""
while not data.endswith(b"\n"):
    chunk = s.recv(65536)
    if not chunk:
        break
    data += chunk
print(data.decode().strip())
PY
}
start_judge

# Malformed requests: answered, and the judge still serves.
ask_raw 'not json' | grep -q '"exit":65.*ca-judge: error: request: invalid JSON' || fail "non-JSON request: $(ask_raw 'not json')"
ask_raw '{"tool": "build", "workspace": "x"}' | grep -q '"exit":64.*tool: expected' || fail "unknown tool"
ask_raw '{"tool": "verify"}' | grep -q '"exit":64.*one of workspace' || fail "neither workspace nor record"
ask_raw '{"tool": "verify", "workspace": "a", "record": {}}' | grep -q '"exit":64.*one of workspace' ||
  fail "both workspace and record"
ask_raw '[1, 2]' | grep -q '"exit":65.*expected a JSON object' || fail "a request that is not an object"

# A missing workspace: the cold tool's exit and message, word for word.
run "$CA_BIN/ca-verify" --workspace "$WORK/nope" --backend cpu
cold_code=$code cold_err=$(cat "$WORK/stderr")
run "$CA_BIN/ca-judge" ask --socket "$sock" verify --workspace "$WORK/nope" --backend cpu
expect_code "$cold_code"
[ "$(cat "$WORK/stderr")" = "$cold_err" ] || fail "missing workspace: warm '$(cat "$WORK/stderr")', cold '$cold_err'"

# A second judge on a live socket is refused.
run "$CA_BIN/ca-judge" serve --socket "$sock"
expect_code 74
expect_stderr "already listens"

# Two clients at once (two verify slots): both answered, both [PASS].
"$CA_BIN/ca-judge" ask --socket "$sock" verify --workspace "$ws" >"$WORK/one" 2>&1 &
one=$!
"$CA_BIN/ca-judge" ask --socket "$sock" verify --workspace "$ws" >"$WORK/two" 2>&1 &
two=$!
wait "$one" || fail "first client: $(cat "$WORK/one")"
wait "$two" || fail "second client: $(cat "$WORK/two")"
for f in one two; do grep -q "^\[PASS\] compare: 5 trials" "$WORK/$f" || fail "client $f: $(cat "$WORK/$f")"; done

# The judge dies while the request waits for the device's lease: the client ends with 69.
hold_lease
"$CA_BIN/ca-judge" ask --socket "$sock" verify --workspace "$ws" >"$WORK/stdout" 2>"$WORK/stderr" 9>&- &
client=$!
waiting_for_lease "$judge" || fail "the judge never waited for the lease"
kill -KILL "$judge"
wait "$judge" 2>/dev/null
wait "$client"
code=$?
release_lease
expect_code 69
expect_stderr "closed the connection without an answer"

# Its socket is stale now: a new judge takes it.
start_judge

# ca-rollout --judge: the agent's verify through the judge, then (judge gone) through the cold tool, same text.
python3 - >"$WORK/replay.jsonl" <<'PY'
import json
calls = [("bash", {"command": "true"}), ("verify", {}), ("finish", {"message": "done"})]
messages = [{"role": "assistant", "content": None,
             "tool_calls": [{"id": f"c{i}", "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}]}
            for i, (n, a) in enumerate(calls)]
print(json.dumps({"kind": "trajectory", "messages": messages}))
PY
rollout() {  # rollout OUT: one replayed episode whose workspace gets the correct kernel by bash, then verify
  python3 - "$WORK/replay.jsonl" "$dir/relu_rand__correct.cpp" >"$WORK/replay_kernel.jsonl" <<'PY'
import json, shlex, sys
record = json.loads(open(sys.argv[1]).readline())
kernel = open(sys.argv[2]).read()
first = record["messages"][0]["tool_calls"][0]["function"]
first["arguments"] = json.dumps({"command": "cat > kernels/relu.cpp <<'EOF'\n" + kernel + "EOF"})
print(json.dumps(record))
PY
  "$CA_BIN/ca-rollout" --policy "replay:$WORK/replay_kernel.jsonl" --judge "$sock" --no-final-profile \
    "$WORK/tasks.jsonl" -o "$1" 2>"$1.err" 9>&-
}
verify_text() {  # verify_text TRAJECTORY: the content of its verify call
  python3 -c 'import json,sys; r=json.loads(open(sys.argv[1]).readline()); print([m["content"] for m in r["messages"] if m["role"] == "tool" and m["name"] == "verify"][0])' "$1"
}
rollout "$WORK/warm.jsonl" || fail "ca-rollout with a judge failed: $(head -3 "$WORK/warm.jsonl.err")"
grep -q "warm judge" "$WORK/warm.jsonl.err" && fail "the judge did not answer: $(cat "$WORK/warm.jsonl.err")"
kill -TERM "$judge"
wait "$judge"
rollout "$WORK/cold.jsonl" || fail "ca-rollout without a judge failed: $(head -3 "$WORK/cold.jsonl.err")"
grep -q "warm judge: cannot connect" "$WORK/cold.jsonl.err" || fail "no warning of the fallback"
warm_text=$(verify_text "$WORK/warm.jsonl") cold_text=$(verify_text "$WORK/cold.jsonl")
[ "$warm_text" = "$cold_text" ] || fail "verify through the judge: '$warm_text'; cold: '$cold_text'"
case "$warm_text" in *"[PASS] compare: 5 trials"*) ;; *) fail "verify did not pass: $warm_text" ;; esac
finish
