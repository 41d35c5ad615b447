# Side files (--tasks, --reference, ca-synth's op records) share one policy (util/side_file.h): a missing file exits
# 66, a bad line 65 with FILE:LINE, whichever tool reads it.
. "$(dirname "$0")/lib.bash"
export CA_LOCK_DIR=$WORK
dir=$CA_SOURCE_DIR/examples/candidates/cpu
{ head -1 "$dir/tasks.jsonl"; echo 'not json'; } >"$WORK/bad.jsonl"
{ head -1 "$dir/tasks.jsonl"; echo '{"kind":"task"}'; } >"$WORK/no_id.jsonl"
missing=$WORK/missing.jsonl

for tool in ca-verify ca-profile; do
  run "$CA_BIN/$tool" --tasks "$missing" "$dir/candidates.jsonl"
  expect_code 66; expect_stderr "$tool: error: "
  run "$CA_BIN/$tool" --tasks "$WORK/bad.jsonl" "$dir/candidates.jsonl"
  expect_code 65; expect_stderr "$tool: error: $WORK/bad.jsonl:2: "
  run "$CA_BIN/$tool" --tasks "$WORK/no_id.jsonl" "$dir/candidates.jsonl"
  expect_code 65; expect_stderr "$tool: error: $WORK/no_id.jsonl:2: id"
done

tasks=$CA_SOURCE_DIR/examples/filter/tasks.jsonl
run "$CA_BIN/ca-filter" --reference "$missing" "$tasks"
expect_code 66; expect_stderr "ca-filter: error: "
run "$CA_BIN/ca-filter" --reference "$WORK/bad.jsonl" "$tasks"
expect_code 65; expect_stderr "ca-filter: error: $WORK/bad.jsonl:2: "

run "$CA_BIN/ca-synth" "$missing"
expect_code 66; expect_stderr "ca-synth: error: "
echo 'not json' >"$WORK/ops.jsonl"
run "$CA_BIN/ca-synth" "$WORK/ops.jsonl"
expect_code 65; expect_stderr "ca-synth: error: $WORK/ops.jsonl:1: "
finish
