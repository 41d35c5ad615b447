"""Packs the example candidates of one backend folder into candidate records.

    python3 examples/candidates/pack.py examples/candidates/cpu > examples/candidates/cpu/candidates.jsonl
    python3 examples/candidates/pack.py --check FOLDER...   exit 1 where FOLDER/candidates.jsonl is not what packing
                                                            gives (a candidate's source changed since)

Each line of FOLDER/EXPECTED is `<slug> <task_id> <verdict> <reward>`: verdict
PASS or the stage ca-verify must fail at; reward what `ca-verify | ca-profile |
ca-reward` must give: -1, 1, N+ for at least N where the speed is not
asserted, or <=SLUG for at most what the honest twin SLUG earns in the same run
(a cheat that must not gain by its cheat). The source is FOLDER/<slug>.cpp (or .cu). The record's `expect` and
`expect_reward` fields carry them for the tests.
"""
import json
import os
import sys


def pack(folder):
    backend = os.path.basename(os.path.normpath(folder))
    with open(os.path.join(folder, "EXPECTED")) as f:
        rows = [line.split() for line in f if line.strip()]
    lines = []
    for slug, task_id, verdict, reward in rows:
        extension = ".cu" if backend == "cuda" else ".cpp"
        with open(os.path.join(folder, slug + extension)) as f:
            source = f.read()
        lines.append(json.dumps({"kind": "candidate", "id": f"{backend}/{slug}", "task_id": task_id, "backend": backend,
                                 "files": {f"kernels/{slug}{extension}": source}, "expect": verdict,
                                 "expect_reward": reward}, separators=(",", ":")) + "\n")
    return "".join(lines)


def check(folders):
    stale = []
    for folder in folders:
        path = os.path.join(folder, "candidates.jsonl")
        with open(path) as f:
            if f.read() != pack(folder):
                stale.append(path)
    for path in stale:
        print(f"pack.py: error: {path} is stale: run python3 examples/candidates/pack.py {os.path.dirname(path)} > {path}",
              file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    if sys.argv[1] == "--check":
        sys.exit(check(sys.argv[2:]))
    sys.stdout.write(pack(sys.argv[1]))
