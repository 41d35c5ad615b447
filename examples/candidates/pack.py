"""Packs the example candidates of one backend folder into candidate records.

    python3 examples/candidates/pack.py examples/candidates/cpu > examples/candidates/cpu/candidates.jsonl

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


def main(folder):
    backend = os.path.basename(os.path.normpath(folder))
    with open(os.path.join(folder, "EXPECTED")) as f:
        rows = [line.split() for line in f if line.strip()]
    for slug, task_id, verdict, reward in rows:
        extension = ".cu" if backend == "cuda" else ".cpp"
        with open(os.path.join(folder, slug + extension)) as f:
            source = f.read()
        print(json.dumps({"kind": "candidate", "id": f"{backend}/{slug}", "task_id": task_id, "backend": backend,
                          "files": {f"kernels/{slug}{extension}": source}, "expect": verdict, "expect_reward": reward}, separators=(",", ":")))


if __name__ == "__main__":
    main(sys.argv[1])
