#!/usr/bin/env bash
# pipelines/eval.mk and eval_slurm.sh: shard.py puts every task of a suite in exactly one shard; the Slurm script's
# --dry-run (no Slurm) prints one ca-eval command per array index over those shards and the merge; eval.mk with
# DRY_RUN=1 prints the same commands through GNU parallel; a real two-shard run over relu_rand's candidates gives
# the same verdicts as one ca-eval run over the whole suite.
source "$(dirname "$0")/lib.bash"
EX="$CA_SOURCE_DIR/examples/candidates/cpu"
P="$CA_SOURCE_DIR/pipelines"

run python3 "$P/shard.py" "$EX/tasks.jsonl" 3 "$WORK/shards"
expect_code 0
python3 - "$EX/tasks.jsonl" "$WORK/shards" 3 <<'PY' || fail "shards do not cover every task exactly once"
import json, sys
suite = [json.loads(l)["id"] for l in open(sys.argv[1]) if l.strip()]
shards = [[json.loads(l)["id"] for l in open(f"{sys.argv[2]}/shard-{i}.jsonl")] for i in range(int(sys.argv[3]))]
every = [i for shard in shards for i in shard]
assert sorted(every) == sorted(suite) and len(set(every)) == len(every), (every, suite)
assert sum(1 for s in shards if s) > 1, shards  # the hash spreads them
PY
run python3 "$P/shard.py" "$EX/tasks.jsonl" 0 "$WORK/bad"
expect_code 64

# Slurm without Slurm: the commands of each array index.
run env SOLUTIONS=cands.jsonl EVAL_FLAGS=--no-compile BIN=/opt/bin bash "$P/eval_slurm.sh" --dry-run "$EX/tasks.jsonl" 3 "$WORK/slurm"
expect_code 0
for i in 0 1 2; do
  expect_stdout "array $i: /opt/bin/ca-eval run --suite $WORK/slurm/shards/shard-$i.jsonl --solutions cands.jsonl --no-compile --workdir $WORK/slurm/work-$i"
done
[ "$(grep -c '^array ' "$WORK/stdout")" -eq 3 ] || fail "not one command per array index"
expect_stdout "merge: bash $P/shard_command.sh $WORK/slurm merge"
cmp -s <(cat "$WORK"/slurm/shards/shard-*.jsonl | sort) <(sort "$EX/tasks.jsonl") || fail "slurm shards differ from the suite"
run bash "$P/eval_slurm.sh" --dry-run "$EX/tasks.jsonl" 2 "$WORK/nosource"
expect_code 64

if command -v parallel >/dev/null; then
  run make -s -f "$P/eval.mk" SUITE="$EX/tasks.jsonl" SOLUTIONS=cands.jsonl SHARDS=3 OUT="$WORK/mk" DRY_RUN=1
  expect_code 0
  [ "$(grep -c 'shard_command.sh' "$WORK/stdout")" -eq 3 ] || fail "eval.mk DRY_RUN: not one command per shard"
  # A real run in two shards: relu_rand's correct and identity candidates, and a task without a solution.
  grep -E '"id":"cpu/relu_rand__(correct|identity)"' "$EX/candidates.jsonl" >"$WORK/candidates.jsonl"
  grep -E '"id":"example/(relu_rand|attention_rowmax)"' "$EX/tasks.jsonl" >"$WORK/suite.jsonl"
  run make -s -f "$P/eval.mk" BIN="$CA_BIN" SUITE="$WORK/suite.jsonl" SOLUTIONS="$WORK/candidates.jsonl" SHARDS=2 \
    JOBS=2 EVAL_FLAGS=--no-compile OUT="$WORK/real"
  expect_code 0
  python3 - "$WORK/real/results.jsonl" <<'PY' || fail "the merged run's verdicts"
import json, sys
records = [json.loads(l) for l in open(sys.argv[1])]
tasks = {r["task_id"]: r["verdict"] for r in records if r["kind"] == "eval_task"}
assert tasks == {"example/relu_rand": "PASS", "example/attention_rowmax": "MISSING"}, tasks
assert records[-1]["overall"]["tasks"] == 2 and records[-1]["overall"]["passed"] == 1, records[-1]["overall"]
PY
  [ -f "$WORK/real/report/report.html" ] || fail "no report"
else
  echo "note: GNU parallel missing (scripts/setup-deps.sh installs it); eval.mk not run"
fi
finish
