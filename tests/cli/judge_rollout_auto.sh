# ca-rollout --judge auto starts one warm judge for its episodes: the agent's verify and profile calls are answered
# by it (no fallback warning; --no-compile passed on to it), and the judge is gone when ca-rollout ends.
. "$(dirname "$0")/lib.bash"
export CA_LOCK_DIR=$WORK CA_CACHE_DIR=$WORK/cache TMPDIR=$WORK
dir=$CA_SOURCE_DIR/examples/candidates/cpu
grep '"example/relu_rand"' "$dir/tasks.jsonl" >"$WORK/tasks.jsonl"
python3 - "$dir/relu_rand__correct.cpp" >"$WORK/replay.jsonl" <<'PY'
import json, sys
kernel = open(sys.argv[1]).read()
calls = [("str_replace_editor", {"command": "create", "path": "kernels/relu.cpp", "file_text": kernel}),
         ("verify", {}), ("profile", {}), ("finish", {"message": "done"})]
messages = [{"role": "assistant", "content": None,
             "tool_calls": [{"id": f"c{i}", "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}]}
            for i, (n, a) in enumerate(calls)]
print(json.dumps({"kind": "trajectory", "messages": messages}))
PY
run "$CA_BIN/ca-rollout" --policy "replay:$WORK/replay.jsonl" -j 2 --judge auto --no-compile --no-final-profile "$WORK/tasks.jsonl" \
  -o "$WORK/out.jsonl"
expect_code 0
grep -q "judge" "$WORK/stderr" && fail "the judge did not start or a call fell back: $(grep "judge" "$WORK/stderr")"
python3 - "$WORK/out.jsonl" <<'PY' || fail "the agent's verify or profile through the judge"
import json, sys
r = json.loads(open(sys.argv[1]).readline())
tools = {m["name"]: m["content"] for m in r["messages"] if m["role"] == "tool"}
assert "[PASS] compare: 5 trials" in tools["verify"], tools["verify"]
assert tools["profile"].startswith("Torch Baseline: ") and "Torch Compile: n/a" in tools["profile"], tools["profile"]
calls = [c for t in r["turns"] for c in t["tools"]]
assert all(c["ok"] for c in calls), calls
PY
ls -d "$WORK"/ca-judge-* >/dev/null 2>&1 && fail "the judge's directory was left behind"
pgrep -f "$WORK/ca-judge-" >/dev/null && fail "the judge outlived ca-rollout"
finish
