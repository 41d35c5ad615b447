"""Scripts for fake_openai_server.py and the checks of what ca-rollout made of
them (tests/cli/rollout_openai_protocol.sh).

    python fake_openai_scenarios.py write DIR KERNEL   # DIR/<scenario>.json for each scenario
    python fake_openai_scenarios.py check DIR          # DIR/<scenario>.out.jsonl and .log.jsonl

Every scenario must end in exactly one trajectory record; the checks say what
else each must show.
"""
import json
import os
import sys


def call(i, name, args):
    text = args if isinstance(args, str) else json.dumps(args)
    return {"id": f"srv_{i}", "type": "function", "function": {"name": name, "arguments": text}}


def tool_calls(*calls):
    return {"message": {"content": None, "tool_calls": list(calls)}}


def text(content):
    return {"message": {"content": content}}


FINISH = tool_calls(call(9, "finish", {"message": "done"}))


def scenarios(kernel):
    create = {"command": "create", "path": "kernels/relu.cpp", "file_text": kernel}
    return {
        # Structured tool calls with usage and logprobs (vLLM's token_id form).
        "round_trip": [dict(tool_calls(call(0, "str_replace_editor", create)),
                            usage={"prompt_tokens": 1000, "completion_tokens": 3},
                            logprobs={"content": [{"token": "token_id:11", "logprob": -0.5},
                                                  {"token": "token_id:12", "logprob": -0.25}]}),
                       tool_calls(call(1, "bash", {"command": "ls kernels; echo out; echo err >&2"})),
                       FINISH],
        # Each text-embedded form once: hermes tags, a fenced json block, a bare object.
        "text_forms": [text("I will write it.\n<tool_call>\n" + json.dumps({"name": "str_replace_editor", "arguments": create}) + "\n</tool_call>"),
                       text("Now check:\n```json\n{\"name\": \"verify\", \"arguments\": {}}\n```"),
                       text("Done. {\"name\": \"finish\", \"arguments\": {\"message\": \"ok\"}}")],
        "rate_limited": [{"status": 429, "body": "{\"error\": {\"message\": \"slow down\"}}", "retry_after": "0"},
                         {"status": 503, "body": "overloaded"}, FINISH],
        "server_error": [{"status": 500, "body": "internal error"}],
        "timeout": [{"hang": True}],
        "reset": [{"close": True}],
        "truncated": [{"raw": "{\"choices\": [{\"message\": {\"content\": \"hel"}],
        "never_finishes": [tool_calls(call(0, "bash", {"command": "echo still working"}))],
        "same_failing_call": [tool_calls(call(0, "str_replace_editor", {"command": "str_replace", "path": "kernels/none.cpp",
                                                                        "old_str": "a", "new_str": "b"}))],
        "no_tool_calls": [text("I do not know how to do this.")],
        "bad_calls": [tool_calls(call(0, "rm_rf", {}), call(1, "bash", "{not json"), call(2, "bash", {}),
                                 call(3, "str_replace_editor", {"command": "view", "path": "../../etc/passwd"}),
                                 call(4, "str_replace_editor", {"command": "create", "path": "model.py", "file_text": "x"}),
                                 call(5, "str_replace_editor", {"command": "create", "path": "kernels/big.cpp",
                                                                "file_text": "x" * (10 << 20)})),
                      FINISH],
    }


def write(directory, kernel_path):
    kernel = open(kernel_path).read()
    for name, script in scenarios(kernel).items():
        with open(os.path.join(directory, name + ".json"), "w") as f:
            json.dump(script, f)
    print(" ".join(scenarios(kernel)))


def load(directory, name):
    records = [json.loads(line) for line in open(os.path.join(directory, name + ".out.jsonl"))]
    assert len(records) == 1, f"{name}: {len(records)} records"
    log = [json.loads(line) for line in open(os.path.join(directory, name + ".log.jsonl"))]
    return records[0], log


def tool_results(record):
    return [m["content"] for m in record["messages"] if m["role"] == "tool"]


def check(directory):
    r, log = load(directory, "round_trip")
    first = log[0]["body"]
    assert log[0]["path"] == "/v1/chat/completions"
    assert log[0]["headers"]["Authorization"] == "Bearer sekrit", log[0]["headers"]
    assert sorted(first) == sorted(["model", "messages", "tools", "tool_choice", "temperature", "top_p", "max_tokens",
                                    "seed", "logprobs", "top_logprobs", "return_tokens_as_token_ids"]), sorted(first)
    assert (first["model"], first["temperature"], first["top_p"], first["max_tokens"], first["tool_choice"]) == \
        ("tiny", 0.5, 0.9, 256, "auto"), first
    assert isinstance(first["seed"], int) and first["seed"] == log[1]["body"]["seed"]
    assert [m["role"] for m in first["messages"]] == ["system", "user"]
    assert [t["function"]["name"] for t in first["tools"]] == ["bash", "str_replace_editor", "glob", "verify", "profile", "finish"]
    second = log[1]["body"]["messages"]
    assert second[2]["role"] == "assistant" and second[2]["tool_calls"][0]["id"] == "srv_0", second[2]
    assert second[2]["tool_calls"][0]["function"]["name"] == "str_replace_editor"
    assert second[3] == {"role": "tool", "tool_call_id": "srv_0", "name": "str_replace_editor",
                         "content": "created kernels/relu.cpp (%d bytes)" % len(json.loads(second[2]["tool_calls"][0]["function"]["arguments"])["file_text"])}, second[3]
    assert len(log) == 3 and r["end"]["reason"] == "finish" and r["error"] is None, r["end"]
    assert r["turns"][0]["prompt_tokens"] == 1000 and r["turns"][0]["completion_tokens"] == 3
    assert r["turns"][0]["token_ids"] == [11, 12] and r["turns"][0]["logprobs"] == [-0.5, -0.25], r["turns"][0]
    assert r["turns"][1]["prompt_tokens"] is None
    bash = tool_results(r)[1]
    assert "relu.cpp" in bash and "out" in bash and "err" in bash, bash
    assert r["policy"]["name"] == "openai" and r["policy"]["model"] == "tiny" and r["policy"]["sampling"]["temperature"] == 0.5
    assert r["reward"]["value"] == 1, r["reward"]  # correct; --no-final-profile caps it at 1

    r, log = load(directory, "text_forms")
    assert r["end"]["reason"] == "finish" and r["error"] is None, r["end"]
    assert all(t["extra"]["tool_calls_from_text"] for t in r["turns"]), r["turns"]
    assert [m["tool_calls"][0]["function"]["name"] for m in r["messages"] if m.get("tool_calls")] == \
        ["str_replace_editor", "verify", "finish"]
    ids = [m["tool_calls"][0]["id"] for m in r["messages"] if m.get("tool_calls")]
    assert len(set(ids)) == 3, ids
    assert "[PASS] compare" in tool_results(r)[1], tool_results(r)[1]
    assert r["reward"]["value"] == 1, r["reward"]

    r, log = load(directory, "rate_limited")
    assert len(log) == 3 and r["end"]["reason"] == "finish" and r["error"] is None, (len(log), r["end"], r["error"])

    for name, words in [("server_error", ["HTTP 500: internal error", "after 3 attempts"]),
                        ("timeout", ["timed out after 1", "after 3 attempts"]),
                        ("reset", ["after 3 attempts"]),
                        ("truncated", ["reply is not JSON"])]:
        r, log = load(directory, name)
        assert r["end"]["reason"] == "policy_error", (name, r["end"])
        assert all(w in r["error"] for w in words), (name, r["error"])
        assert r["reward"]["value"] == -1, (name, r["reward"])  # the judge still ran, on an empty kernels/

    r, log = load(directory, "never_finishes")
    assert r["end"]["reason"] == "max_turns" and len(r["turns"]) == 4 and len(log) == 4, r["end"]
    assert tool_results(r) == ["still working\n"] * 4, tool_results(r)

    r, log = load(directory, "same_failing_call")
    assert r["end"]["reason"] == "max_turns" and len(log) == 4, r["end"]
    assert all(t.startswith("error: kernels/none.cpp: no such file") for t in tool_results(r)), tool_results(r)
    assert all(not t["tools"][0]["ok"] for t in r["turns"])

    r, log = load(directory, "no_tool_calls")
    assert r["end"]["reason"] == "no_tool_calls" and r["error"] is None and len(log) == 1, r["end"]
    assert r["messages"][-1] == {"role": "assistant", "content": "I do not know how to do this."}

    r, log = load(directory, "bad_calls")
    results = tool_results(r)
    # The 10 MB call stays in the conversation (it is what the model said), which fills the context.
    assert r["end"]["reason"] == "max_context_tokens" and len(log) == 1, r["end"]
    assert results[0].startswith("error: unknown tool 'rm_rf'"), results[0]
    assert results[1].startswith("error: arguments are not valid JSON"), results[1]
    assert results[2] == "error: bash needs a string argument 'command'", results[2]
    assert results[3] == "error: ../../etc/passwd: outside the workspace", results[3]
    assert results[4] == "error: model.py: files may be written only under kernels/", results[4]
    assert results[5].startswith("error: the call's arguments are 10485") and "at most 1048576" in results[5], results[5][:200]
    print("all scenarios checked")


if __name__ == "__main__":
    if sys.argv[1] == "write":
        write(sys.argv[2], sys.argv[3])
    else:
        check(sys.argv[2])
