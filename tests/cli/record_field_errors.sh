# Records a newcomer gets wrong are judged or refused by name, never lost or read as something else (issue 24 item
# 7): a candidate file name longer than the filesystem takes gets a static verdict; a task whose seed is not an
# integer >= 0 is an error naming file:line and the field (it ran as seed 0 before).
. "$(dirname "$0")/lib.bash"
dir=$CA_SOURCE_DIR/examples/candidates/cpu
export CA_LOCK_DIR=$WORK

python3 - "$dir/relu_rand__correct.cpp" >"$WORK/long.jsonl" <<'PY'
import json, sys
source = open(sys.argv[1]).read()
for n in (300, 200):
    print(json.dumps({"kind": "candidate", "id": f"long{n}", "task_id": "example/relu_rand", "backend": "cpu",
                      "files": {"kernels/" + "a" * n + ".cpp": source}}))
PY
run "$CA_BIN/ca-verify" --tasks "$dir/tasks.jsonl" "$WORK/long.jsonl"
expect_code 0
[ "$(stdout_lines)" -eq 2 ] || fail "expected a verdict for each candidate, got $(stdout_lines) lines"
grep -F '"id":"long300"' "$WORK/stdout" | grep -F '"stage":"static"' | grep -qF 'a file or folder name of 304 bytes' ||
  fail "the 300-character name has no static verdict: $(grep -F long300 "$WORK/stdout" | cut -c1-300)"
grep -F '"id":"long200"' "$WORK/stdout" | grep -qF '"ok":true' || fail "a 200-character name is fine"

head -1 "$dir/tasks.jsonl" | sed 's/"seed":[0-9]*/"seed":"one"/' >"$WORK/tasks.jsonl"
sed -n 2p "$dir/tasks.jsonl" | sed 's/"seed":[0-9]*/"seed":-3/' >>"$WORK/tasks.jsonl"
grep -c '"seed":"one"' "$WORK/tasks.jsonl" >/dev/null || fail "test data: no seed replaced"
run "$CA_BIN/ca-filter" "$WORK/tasks.jsonl" -o "$WORK/kept.jsonl"
expect_code 1
expect_stderr "ca-filter: error: $WORK/tasks.jsonl:1: seed: expected an integer >= 0, got \"one\""
expect_stderr "ca-filter: error: $WORK/tasks.jsonl:2: seed: expected an integer >= 0, got -3"
run "$CA_BIN/ca-crawl" tasks "$WORK/tasks.jsonl"
expect_code 1
expect_stderr "$WORK/tasks.jsonl:1: seed: expected an integer >= 0, got \"one\""
finish
