#!/usr/bin/env bash
# ca-rollout --policy builtin on the cpu backend over the example tasks (examples/tasks.jsonl, the cpu candidates'
# tasks) and the synthesized examples (examples/synth/tasks.jsonl): every covered task's kernel passes the harness's
# own judgement and, taken out of its trajectory as a candidate record, a separate `ca-verify --tasks`; every other
# task ends in a finish that names each uncovered node with a reason. The same seed gives the same episode.
source "$(dirname "$0")/lib.bash"
EX="$CA_SOURCE_DIR/examples"
python3 - "$EX/tasks.jsonl" "$EX/candidates/cpu/tasks.jsonl" "$EX/synth/tasks.jsonl" >"$WORK/tasks.jsonl" <<'PY'
import json, sys
seen = set()
for path in sys.argv[1:]:
    for line in open(path):
        task = json.loads(line)
        if task["id"] in seen:
            continue
        seen.add(task["id"])
        print(json.dumps(task))
        if task["id"] == "example/attention_rowmax":  # and one the writer does not cover: roll before the row max
            task["id"] = "example/roll_rowmax"
            task["program"]["nodes"][0] = {"op": "aten::roll", "args": ["%q", [1], [2]], "out": ["a"]}
            print(json.dumps(task))
PY

run "$CA_BIN/ca-rollout" --policy builtin --builtin-variants 2 --no-compile --no-final-profile -j 2 --seed 3 \
  "$WORK/tasks.jsonl" -o "$WORK/out.jsonl"
expect_code 0
python3 - "$WORK/out.jsonl" "$WORK/candidates.jsonl" <<'PY' || fail "trajectories"
import base64, io, json, sys, tarfile
records = [json.loads(line) for line in open(sys.argv[1])]
assert len(records) == 15, len(records)
candidates = open(sys.argv[2], "w")
covered, uncovered = set(), {}
for r in records:
    assert r["policy"]["name"] == "builtin" and r["error"] is None, r["error"]
    assert r["end"]["reason"] == "finish", (r["task_id"], r["end"])
    extras = [turn.get("extra", {}) for turn in r["turns"]]
    calls = [c["function"]["name"] for m in r["messages"] if m["role"] == "assistant" for c in m.get("tool_calls", [])]
    if "uncovered" in extras[-1]:
        reasons = extras[-1]["uncovered"]
        assert calls == ["finish"], calls
        message = json.loads(r["messages"][-2]["tool_calls"][0]["function"]["arguments"])["message"]
        for node in reasons:
            assert node["reason"] and node["op"] in message, (node, message)
        uncovered[r["task_id"]] = [node["op"] for node in reasons]
        assert r["reward"]["value"] == -1, r["reward"]
        continue
    covered.add(r["task_id"])
    # write, verify, (profile when it passes), a second variant, then finish, possibly after writing the best back
    assert calls[:2] == ["str_replace_editor", "verify"] and calls[-1] == "finish", calls
    assert r["verify"]["ok"] is True, (r["task_id"], r["verify"]["message"])
    assert r["reward"]["value"] == 1, r["reward"]
    data = base64.b64decode(r["kernels"]["data"])
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        files = {m.name if m.name.startswith("kernels/") else "kernels/" + m.name: tar.extractfile(m).read().decode()
                 for m in tar.getmembers() if m.isfile()}
    assert any(p.endswith(".cpp") for p in files), files.keys()
    candidates.write(json.dumps({"kind": "candidate", "id": r["task_id"], "task_id": r["task_id"], "backend": "cpu",
                                 "files": files}) + "\n")
for task in ["example/linear_leaky_relu", "example/layernorm_gelu", "example/relu_rand", "example/conv_relu_pool",
             "example/softmax_cumsum", "example/attention_rowmax"]:
    assert task in covered, (task, uncovered.get(task))
assert uncovered["example/roll_rowmax"] == ["aten::roll"], uncovered
print(len(covered), "covered,", len(uncovered), "uncovered", file=sys.stderr)
PY

# The kernels pass the same checks as any candidate, outside the rollout too.
run "$CA_BIN/ca-verify" --tasks "$WORK/tasks.jsonl" "$WORK/candidates.jsonl"
expect_code 0
python3 -c "
import json, sys
verdicts = [json.loads(l) for l in open(sys.argv[1])]
assert verdicts and all(v['verify']['ok'] for v in verdicts), [(v['task_id'], v['verify']['message']) for v in verdicts if not v['verify']['ok']]
" "$WORK/stdout" || fail "ca-verify of the extracted kernels"

# Deterministic: the same seed writes the same turns (one variant: with two, the timings choose which is kept).
grep '"example/relu_rand"' "$WORK/tasks.jsonl" >"$WORK/relu.jsonl"
for n in 1 2; do
  run "$CA_BIN/ca-rollout" --policy builtin --builtin-variants 1 --no-compile --no-final-profile --seed 3 "$WORK/relu.jsonl" -o "$WORK/again$n.jsonl"
  expect_code 0
done
python3 - "$WORK/again1.jsonl" "$WORK/again2.jsonl" <<'PY' || fail "same seed, different episodes"
import json, sys
def calls(path):
    r = json.loads(open(path).readline())
    return [c["function"]["arguments"] for m in r["messages"] if m["role"] == "assistant" for c in m.get("tool_calls", [])]
assert calls(sys.argv[1]) == calls(sys.argv[2])
PY
finish
