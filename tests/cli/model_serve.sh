#!/usr/bin/env bash
# ca-model serve: an OpenAI-compatible server over a tiny random Qwen2 (SmolLM2's tokenizer, context 8192) on a
# port of its choosing. Protocol checks with python's urllib (models, completions with n, seeds, logprobs and top
# logprobs checked against a transformers forward pass, concurrent greedy requests batched with the same tokens as
# alone, OpenAI error objects with their statuses), then ca-rollout --policy openai: against it end to end,
# SIGTERM (130), a missing checkpoint (66).
source "$(dirname "$0")/lib.bash"
source "$CA_SOURCE_DIR/tests/model/setup.bash"
"$PY" "$CA_SOURCE_DIR/tests/model/model_reference.py" tiny "$WORK/tiny" --arch qwen2 --tokenizer "$SMOLLM2" >/dev/null ||
  { fail "could not make the tiny model"; finish; }
"$PY" -c 'import json, sys; c = json.load(open(sys.argv[1])); c["max_position_embeddings"] = 8192; json.dump(c, open(sys.argv[1], "w"))' \
  "$WORK/tiny/config.json"

"$CA_BIN/ca-model" serve -m "$WORK/tiny" --port 0 --port-file "$WORK/port" --max-batch 8 >/dev/null 2>"$WORK/serve.err" &
server=$!
trap 'kill "$server" 2>/dev/null; rm -rf "$WORK"' EXIT  # a failed check must not leave the server running
# Wait for the state (the port file written once the socket listens), never for a time.
until [ -s "$WORK/port" ] || ! kill -0 "$server" 2>/dev/null; do sleep 0.05; done
[ -s "$WORK/port" ] || { cat "$WORK/serve.err" >&2; fail "the server did not start"; finish; }
port=$(cat "$WORK/port")
grep -qF "serving tiny on http://127.0.0.1:$port/v1" "$WORK/serve.err" || fail "the server did not say where it listens"

"$PY" - "http://127.0.0.1:$port" "$WORK/tiny" <<'PY' || fail "protocol"
import json, sys, threading, urllib.error, urllib.request
import torch
from transformers import AutoModelForCausalLM
base, ckpt = sys.argv[1], sys.argv[2]

def call(path, body=None, method=None, raw=None):
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    req = urllib.request.Request(base + path, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())

status, models = call("/v1/models")
assert status == 200 and [m["id"] for m in models["data"]] == ["tiny"], models
chat = [{"role": "system", "content": "You write CUDA kernels."}, {"role": "user", "content": "Make relu fast."}]

# n choices, logprobs with top logprobs, token ids; logprobs against one forward pass.
status, r = call("/v1/chat/completions", {"model": "tiny", "messages": chat, "max_tokens": 12, "n": 3, "seed": 7,
                                          "logprobs": True, "top_logprobs": 3, "return_token_ids": True})
assert status == 200 and r["object"] == "chat.completion" and r["model"] == "tiny" and len(r["choices"]) == 3, r
model = AutoModelForCausalLM.from_pretrained(ckpt, dtype=torch.float32).eval()
prompt, worst, used = r["prompt_token_ids"], 0.0, 0
for c in r["choices"]:
    ids, content = c["token_ids"], c["logprobs"]["content"]
    assert 1 <= len(ids) == len(content) <= 12 and c["finish_reason"] in ("stop", "length"), c
    used += len(ids)
    with torch.no_grad():
        lp = model(torch.tensor([prompt + ids])).logits[0].log_softmax(-1)[len(prompt) - 1:-1]
    for k, (i, entry) in enumerate(zip(ids, content)):
        top = entry["top_logprobs"]
        assert len(top) == 3 and top[0]["logprob"] >= top[1]["logprob"] >= top[2]["logprob"], entry
        # A token drawn more likely than the third is among the three.
        assert entry["logprob"] <= top[2]["logprob"] + 1e-9 or entry["token"] in [t["token"] for t in top], entry
        assert entry["bytes"] and all(0 <= b < 256 for b in entry["bytes"]), entry
        worst = max(worst, abs(lp[k, i].item() - entry["logprob"]), abs(lp[k].topk(3).values[0].item() - top[0]["logprob"]))
assert r["usage"] == {"prompt_tokens": len(prompt), "completion_tokens": used, "total_tokens": len(prompt) + used}, r["usage"]
print(f"serve: {used} tokens, logprobs and top logprobs against a transformers forward pass: max abs diff {worst:.3g}")
assert worst < 1e-4, worst

# A seed gives the same tokens; vLLM's token_id:N tokens.
same = [call("/v1/chat/completions", {"messages": chat, "max_tokens": 8, "seed": 11, "logprobs": True,
                                      "return_tokens_as_token_ids": True})[1] for _ in range(2)]
assert same[0]["choices"][0]["logprobs"] == same[1]["choices"][0]["logprobs"], "a seed gave other tokens"
assert all(e["token"].startswith("token_id:") for e in same[0]["choices"][0]["logprobs"]["content"])

# Greedy requests sent at once are batched; each gets the tokens it gets alone.
prompts = [[{"role": "user", "content": "Write kernel number %d, please, as fast as you can." % i + " x" * i}] for i in range(6)]
def greedy(messages, budget):
    return call("/v1/chat/completions", {"messages": messages, "max_tokens": budget, "temperature": 0, "return_token_ids": True})[1]
alone = [greedy(m, 6 + i) for i, m in enumerate(prompts)]
together = [None] * len(prompts)
def worker(i):
    together[i] = greedy(prompts[i], 6 + i)
threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(prompts))]
[t.start() for t in threads]
[t.join() for t in threads]
for a, b in zip(alone, together):
    assert a["choices"][0]["token_ids"] == b["choices"][0]["token_ids"], (a, b)
    assert a["choices"][0]["finish_reason"] == b["choices"][0]["finish_reason"]

# Errors: OpenAI error objects with their statuses.
def error(expect, param, body=None, raw=None, method=None, path="/v1/chat/completions"):
    status, r = call(path, body, method=method, raw=raw)
    assert status == expect and set(r["error"]) == {"message", "type", "param", "code"} and r["error"]["message"], (status, r)
    if param is not None:
        assert r["error"]["param"] == param, r
    return r["error"]
error(400, None, raw=b'{"messages": [')
error(400, None, raw=b'[1, 2]')
assert error(404, "model", {"model": "gpt-4", "messages": chat})["code"] == "model_not_found"
error(400, "messages", {"model": "tiny"})
error(400, "messages[0]", {"messages": [{"role": "wizard", "content": "x"}]})
error(400, "messages[0].content", {"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})
error(400, "stream", {"messages": chat, "stream": True})
error(400, "tool_choice", {"messages": chat, "tool_choice": "required"})
error(400, "tools", {"messages": chat, "tools": [{"type": "function"}]})
error(400, "temperature", {"messages": chat, "temperature": 5})
error(400, "n", {"messages": chat, "n": 0})
error(400, "max_tokens", {"messages": chat, "max_tokens": "many"})
error(400, "top_logprobs", {"messages": chat, "top_logprobs": 2})
assert error(400, "messages", {"messages": [{"role": "user", "content": "relu " * 9000}]})["code"] == "context_length_exceeded"
error(405, None, method="GET")
error(404, None, {"messages": chat}, path="/v1/completion")
# tool_choice none and tools are accepted (the random model writes no call; parsing is model_units' ServeTest).
tools = [{"type": "function", "function": {"name": "finish", "parameters": {"type": "object", "properties": {}}}}]
for choice in ("auto", "none"):
    status, r = call("/v1/chat/completions", {"messages": chat, "tools": tools, "tool_choice": choice, "max_tokens": 4})
    assert status == 200 and r["choices"][0]["message"]["role"] == "assistant", r
PY

# ca-rollout against the server, two episodes at once, with logprobs and token ids.
head -2 "$CA_SOURCE_DIR/examples/candidates/cpu/tasks.jsonl" >"$WORK/tasks.jsonl"
run "$CA_BIN/ca-rollout" --policy "openai:http://127.0.0.1:$port/v1" --logprobs --max-tokens 16 --seed 3 -j 2 \
  --no-compile "$WORK/tasks.jsonl" -o "$WORK/out.jsonl"
expect_code 0
expect_stderr "2 of 2 episodes written"
"$PY" - "$WORK/out.jsonl" <<'PY' || fail "trajectories through the server"
import json, sys
records = [json.loads(line) for line in open(sys.argv[1])]
assert len(records) == 2
for r in records:
    assert r["error"] is None and r["policy"]["name"] == "openai" and r["reward"]["value"] == -1, r["error"]
    for t in r["turns"]:
        assert 1 <= len(t["token_ids"]) == len(t["logprobs"]) == t["completion_tokens"] <= 16, t
        assert t["prompt_tokens"] > 1000 and t["extra"]["response_id"].startswith("chatcmpl-"), t
PY

# A missing checkpoint; a bad port; SIGTERM ends the server cleanly. (A second server on a taken port is not
# refused: cpp-httplib binds with SO_REUSEPORT.)
run "$CA_BIN/ca-model" serve -m "$WORK/none" --port 0
expect_code 66
run "$CA_BIN/ca-model" serve -m "$WORK/tiny" --port 70000
expect_code 64
kill -TERM "$server"
wait "$server"
code=$?
expect_code 130
finish
