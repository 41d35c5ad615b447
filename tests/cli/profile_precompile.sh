# ca-profile --precompile: the compiled baselines of every task in --tasks,
# compiled ahead in one bridge process (-j 1), then found cached by a profile;
# a task that cannot load or compile is reported with its line and id, the
# others go on (exit 1); --threads reaches the bridge; usage errors.
. "$(dirname "$0")/lib.bash"
dir=$CA_SOURCE_DIR/examples/candidates/cpu
export CA_CACHE_DIR=$WORK/cache CA_LOCK_DIR=$WORK
tiny='{"kind":"task","id":"tiny/neg","program":{"inputs":[{"name":"x","dtype":"float32","shape":[3,5]}],"nodes":[{"op":"aten::neg","args":["%x"],"out":["y"]}],"outputs":["y"]}}'
grep '"example/relu_rand"' "$dir/tasks.jsonl" >"$WORK/tasks.jsonl"
echo "$tiny" >>"$WORK/tasks.jsonl"

# Happy path: both compiled (one bridge: its start-up is paid once), then cached.
run "$CA_BIN/ca-profile" --precompile --tasks "$WORK/tasks.jsonl" -j 1
expect_code 0; expect_stderr_empty
grep -qE '^precompiled 2 tasks for cpu: 2 compiled, 0 cached, 0 failed in [0-9.]+ s$' "$WORK/stdout" ||
  fail "summary: $(cat "$WORK/stdout")"
python3 - "$CA_CACHE_DIR/compiled" <<'PY' || fail "records do not show one batch of two"
import glob, json, sys
records = [json.load(open(p)) for p in glob.glob(sys.argv[1] + "/*.json")]
assert len(records) == 2 and all(r["batch"] == 2 and r["threads"] == 1 for r in records), records
PY
run "$CA_BIN/ca-profile" --precompile --tasks "$WORK/tasks.jsonl"
expect_code 0; expect_stdout "precompiled 2 tasks for cpu: 0 compiled, 2 cached, 0 failed"

# A profile afterwards compiles nothing: same program, device, threads and precision. The second candidate of the
# task gets the package the first loaded.
grep '"cpu/relu_rand__correct"' "$dir/candidates.jsonl" >"$WORK/correct.jsonl"
sed 's/"id":"cpu\/relu_rand__correct"/"id":"again"/' "$WORK/correct.jsonl" >>"$WORK/correct.jsonl"
run "$CA_BIN/ca-profile" --tasks "$dir/tasks.jsonl" --rounds 1 --min-ms 1 "$WORK/correct.jsonl"
expect_code 0
python3 - "$WORK/stdout" <<'PY' || fail "the package was not kept: $(cut -c1-300 "$WORK/stdout")"
import json, sys
first, second = (json.loads(line)["profile"]["compile"] for line in open(sys.argv[1]))
assert first["cached"] and not first["kept"] and first["seconds"] == 0, first
assert second["cached"] and second["kept"] and second["key"] == first["key"], second
PY

# A task whose program does not load (line 2) and one the bridge fails (line 3,
# not cached, through a stand-in python): each reported with file:line and id.
{
  echo "$tiny"
  echo '{"kind":"task","id":"bad/op","program":{"inputs":[{"name":"x","dtype":"float32","shape":[3]}],"nodes":[{"op":"aten::no_such_op","args":["%x"],"out":["y"]}],"outputs":["y"]}}'
  echo "${tiny//\[3,5\]/[7,5]}" | sed 's/tiny\/neg/tiny\/wider/'
} >"$WORK/mixed.jsonl"
printf '#!/bin/sh\necho "$@" >"%s/args"\necho "compile_task.py: error: RuntimeError: no lowering" >&2\nexit 1\n' "$WORK" >"$WORK/python"
chmod +x "$WORK/python"
CA_PYTHON=$WORK/python run "$CA_BIN/ca-profile" --precompile --tasks "$WORK/mixed.jsonl"
expect_code 1
expect_stderr "ca-profile: error: $WORK/mixed.jsonl:2: task 'bad/op': "
expect_stderr "ca-profile: error: $WORK/mixed.jsonl:3: task 'tiny/wider': compiling "
expect_stderr "the bridge exited with status 1: compile_task.py: error: RuntimeError: no lowering"
expect_stdout "precompiled 3 tasks for cpu: 0 compiled, 1 cached, 2 failed"
[ "$(grep -c 'error:' "$WORK/stderr")" -eq 2 ] || fail "expected two errors"

# --threads is part of a cpu package's key: with 2 nothing is cached, and the bridge is told.
CA_PYTHON=$WORK/python run "$CA_BIN/ca-profile" --precompile --tasks "$WORK/tasks.jsonl" --threads 2
expect_code 1; expect_stdout "precompiled 2 tasks for cpu: 0 compiled, 0 cached, 2 failed"
grep -q -- "--batch .* --threads 2" "$WORK/args" || fail "bridge arguments: $(cat "$WORK/args")"

run "$CA_BIN/ca-profile" --precompile
expect_code 64; expect_stderr "--precompile needs --tasks FILE"
run "$CA_BIN/ca-profile" --precompile --tasks "$WORK/tasks.jsonl" "$WORK/correct.jsonl"
expect_code 64
run "$CA_BIN/ca-profile" --precompile --tasks "$WORK/tasks.jsonl" --backend tpu
expect_code 64
run "$CA_BIN/ca-profile" --precompile --tasks "$WORK/missing.jsonl"
expect_code 66
"$CA_BIN/ca-profile" --help | grep -q -- "--precompile" || fail "--help lacks --precompile"
finish
