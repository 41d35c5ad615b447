#!/usr/bin/env bash
# The agent harness's overhead per tool call (issue 16), on the cpu backend. ROUNDS (default 15) times, one after
# the other so that both sides see the same machine: a replayed ca-rollout episode that writes a correct kernel,
# then makes a bash round trip in the sandbox (`true`), an edit (str_replace of a comment line) and a verify; and
# the same three actions by hand in a workspace of the same task: `ca-sandbox exec`, a file written by python,
# `ca-verify --workspace`. The episode's times are its trajectory's per-call wall_s (the policy's time excluded).
# Every kernel text is new (a fresh build cache, a distinct comment line), so every verify builds cold.
# Prints medians and their ratio (harness / by hand). Usage: bench/tool_calls.sh [OUT_DIR]; CA_BIN: build/bin.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/build/bench-tool-calls}
mkdir -p "$out"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
export CA_CACHE_DIR=$scratch/cache
grep '"example/relu_rand"' "$root/examples/candidates/cpu/tasks.jsonl" >"$scratch/tasks.jsonl"
python3 - "${CA_BIN:-$root/build/bin}" "$root/examples/candidates/cpu/relu_rand__correct.cpp" "${ROUNDS:-15}" \
  "$scratch" <<'PY' | tee "$out/results.md"
import json, os, statistics, subprocess, sys, time
bin_dir, kernel_path, rounds, scratch = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
kernel = open(kernel_path).read()
tasks = scratch + "/tasks.jsonl"
names = ("bash", "str_replace_editor", "verify")

def run(*argv, **kwargs):
    return subprocess.run(argv, check=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, **kwargs)

def turn(i, name, args):
    call = {"id": f"c{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
    return {"role": "assistant", "content": None, "tool_calls": [call]}

def episode(r):
    """One replayed episode; returns {tool: wall_s} of its bash, edit and verify calls."""
    messages = [turn(0, "str_replace_editor", {"command": "create", "path": "kernels/relu.cpp",
                                               "file_text": f"// episode {r}, a\n" + kernel}),
                turn(1, "bash", {"command": "true"}),
                turn(2, "str_replace_editor", {"command": "str_replace", "path": "kernels/relu.cpp",
                                               "old_str": f"// episode {r}, a\n", "new_str": f"// episode {r}, b\n"}),
                turn(3, "verify", {}), turn(4, "finish", {"message": "done"})]
    replay, trajectory = f"{scratch}/replay{r}.jsonl", f"{scratch}/trajectory{r}.jsonl"
    with open(replay, "w") as f:
        print(json.dumps({"kind": "trajectory", "task_id": "example/relu_rand", "sample": 0, "messages": messages}), file=f)
    run(bin_dir + "/ca-rollout", "--policy", "replay:" + replay, "--no-final-profile", "-q", tasks, "-o", trajectory)
    record = json.loads(open(trajectory).readline())
    assert record["error"] is None and record["end"]["reason"] == "finish", (record["error"], record["end"])
    calls = [call for t in record["turns"][1:4] for call in t["tools"]]
    assert all(call["ok"] for call in calls), calls
    return {call["name"]: call["wall_s"] for call in calls}

workspace = run(bin_dir + "/ca-sandbox", "create", "--backend", "cpu", "--dir", scratch + "/ws", tasks, "-q").stdout.strip()
path = workspace + "/kernels/relu.cpp"

def timed(action):
    start = time.perf_counter()
    action()
    return time.perf_counter() - start

def edit(old, new):
    text = open(path).read()
    with open(path, "w") as f:
        f.write(text.replace(old, new))

def by_hand(r):
    with open(path, "w") as f:
        f.write(f"// by hand {r}, a\n" + kernel)
    return {"bash": timed(lambda: run(bin_dir + "/ca-sandbox", "exec", workspace, "--wall", "120", "--cpu", "120", "--",
                                      "bash", "-c", "true")),
            "str_replace_editor": timed(lambda: edit(f"// by hand {r}, a\n", f"// by hand {r}, b\n")),
            "verify": timed(lambda: run(bin_dir + "/ca-verify", "--workspace", workspace, "--backend", "cpu"))}

harness, hand = {n: [] for n in names}, {n: [] for n in names}
for r in range(rounds):
    for side, measure in ((harness, episode), (hand, by_hand)):
        for name, seconds in measure(r).items():
            side[name].append(seconds)

print(f"Tool-call overhead, cpu backend, {rounds} calls each, medians in ms: ca-rollout's per-call wall_s against")
print("the same action by hand (ca-sandbox exec; a python file write; ca-verify --workspace), rounds interleaved.\n")
print("| call | ca-rollout | by hand | ratio |")
print("|---|---|---|---|")
for name in names:
    a, b = statistics.median(harness[name]) * 1e3, statistics.median(hand[name]) * 1e3
    print(f"| {name} | {a:.2f} | {b:.2f} | {a / b:.2f} |")
PY
