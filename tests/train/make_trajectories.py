"""Toy trajectory records (docs/TRAJECTORY.md's fields that ca-train reads) for tests/cli/train_*.sh.

    make_trajectories.py OUT.jsonl

12 episodes: 8 kept by RFT (reward > 0, clean calls), 2 with reward 0, 1 calling an unknown tool, 1 repeating a
failing call. The kept ones share one kernel-writing pattern so that a tiny model can learn it in a few updates.
"""
import json
import sys

TOOLS = [{"type": "function", "function": {"name": n, "description": n, "parameters": {"type": "object"}}}
         for n in ("bash", "verify", "finish")]
OPS = ["relu", "gelu", "tanh", "sigmoid", "exp", "abs", "neg", "square", "sqrt", "log", "sin", "cos"]


def call(name, args, cid):
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def episode(i, op, reward, calls):
    msgs = [{"role": "system", "content": "You write CUDA kernels."},
            {"role": "user", "content": f"Write a kernel for torch.{op}."}]
    turns = []
    for k, (name, args, ok) in enumerate(calls):
        cid = f"call_{k}_0"
        text = f"out[i] = {op}(x[i]);" if name == "bash" else ""
        msgs.append({"role": "assistant", "content": text, "tool_calls": [call(name, args, cid)]})
        msgs.append({"role": "tool", "tool_call_id": cid, "name": name, "content": "PASS" if ok else "error: exit 2"})
        turns.append({"tools": [{"name": name, "ok": ok, "wall_s": 0.1}]})
    return {"kind": "trajectory", "id": f"{op}#{i}", "task_id": op, "sample": i, "tools": TOOLS, "messages": msgs,
            "turns": turns, "reward": {"value": reward, "rule": "toy", "reason": "toy"}}


def main():
    good = [("bash", {"command": "nvcc -c kernel.cu"}, True), ("verify", {}, True), ("finish", {}, True)]
    records = [episode(i, OPS[i], 1.0 + 0.5 * (i % 3), good) for i in range(8)]
    records += [episode(8, OPS[8], 0.0, good), episode(9, OPS[9], 0.0, good)]
    records.append(episode(10, OPS[10], 1.0, [("rm", {}, True)] + good))
    bad = ("bash", {"command": "make"}, False)
    records.append(episode(11, OPS[11], 1.0, [bad, bad] + good))
    with open(sys.argv[1], "w") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
