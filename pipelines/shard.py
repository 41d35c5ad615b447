"""Splits a task suite into N shards by task id: a task goes to shard int(sha256(id)[:16], 16) % N, so its shard
does not depend on the file's order or on the other tasks. Writes OUT_DIR/shard-<i>.jsonl for i in 0..N-1 (empty
files included) and prints each shard's task count. Usage: shard.py SUITE N OUT_DIR [INDEX] (INDEX: only that
shard's file)."""
import hashlib
import json
import sys
from pathlib import Path


def shard_of(task_id, count):
    return int(hashlib.sha256(task_id.encode()).hexdigest()[:16], 16) % count


def main():
    if len(sys.argv) not in (4, 5):
        print(__doc__, file=sys.stderr)
        return 64
    suite, count, out = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3])
    only = int(sys.argv[4]) if len(sys.argv) == 5 else None
    if count < 1 or (only is not None and not 0 <= only < count):
        print("shard.py: error: N must be positive and INDEX in 0..N-1", file=sys.stderr)
        return 64
    shards = [[] for _ in range(count)]
    for number, line in enumerate(open(suite), 1):
        if not line.strip():
            continue
        try:
            task_id = json.loads(line)["id"]
        except (ValueError, KeyError, TypeError) as error:
            print(f"shard.py: error: {suite}:{number}: {error}", file=sys.stderr)
            return 65
        shards[shard_of(task_id, count)].append(line if line.endswith("\n") else line + "\n")
    out.mkdir(parents=True, exist_ok=True)
    for index, lines in enumerate(shards):
        if only is None or index == only:
            path = out / f"shard-{index}.jsonl"
            path.with_suffix(".tmp").write_text("".join(lines))
            path.with_suffix(".tmp").rename(path)
            print(f"shard {index}: {len(lines)} tasks")
    return 0


if __name__ == "__main__":
    sys.exit(main())
