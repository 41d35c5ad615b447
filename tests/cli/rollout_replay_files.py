"""Writes replay trajectories for the rollout tests: each kernel file given
becomes one recorded episode that creates it under kernels/, calls verify,
profile and finish (or only finish with --no-checks).

    python rollout_replay_files.py TASK_ID [--no-checks] KERNEL [KERNEL...] > replay.jsonl

Sample i of TASK_ID replays KERNEL i; TASK_ID "*" writes one template
trajectory (no task_id) that serves every task.
"""
import json
import os
import sys


def call(i, name, args):
    return {"id": f"c{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


task_id, rest = sys.argv[1], sys.argv[2:]
checks = "--no-checks" not in rest
kernels = [k for k in rest if k != "--no-checks"]
for sample, path in enumerate(kernels):
    name = "kernels/" + os.path.basename(path).split("__")[0] + os.path.splitext(path)[1]
    messages = [{"role": "assistant", "content": "Writing the kernel.",
                 "tool_calls": [call(0, "str_replace_editor", {"command": "create", "path": name, "file_text": open(path).read()})]}]
    if checks:
        messages += [{"role": "assistant", "content": None, "tool_calls": [call(1, "verify", {})]},
                     {"role": "assistant", "content": None, "tool_calls": [call(2, "profile", {})]}]
    messages.append({"role": "assistant", "content": None, "tool_calls": [call(3, "finish", {"message": "done"})]})
    record = {"kind": "trajectory", "sample": sample, "messages": messages}
    if task_id != "*":
        record["task_id"] = task_id
    print(json.dumps(record))
