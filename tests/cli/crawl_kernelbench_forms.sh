# What the importer could not express before (issue 24 item 4), on examples/kernelbench/level3: non-finite literals
# (a causal mask's -inf), state kept as plain tensors and state updated in forward (RNN hidden states), ops that
# return nothing (torch.export's _assert_tensor_metadata), einops, and --scale as a ceiling (each problem at the
# largest scale <= S that imports, named in its record). Every task equals the original problem in eager PyTorch.
. "$(dirname "$0")/lib.bash"
python=$(torch_python)
export CA_PYTHON=$python
"$python" -c 'import einops' || fail "the bridge's python lacks einops (make venv installs it)"

run "$CA_BIN/ca-crawl" kernelbench "$CA_SOURCE_DIR/examples/kernelbench/level3" --scale 4 -o "$WORK/out/tasks.jsonl" \
  --dump "$WORK/dump"
expect_code 0
expect_stderr "imported 5 of 5 (level 3: 5/5)"
record() { grep -F "\"id\":\"kernelbench-level3-$1\"" "$WORK/out/tasks.jsonl"; }
record 3_Causal | grep -qF '"op":"aten::masked_fill.Scalar","args":["%' || fail "no masked_fill"
record 3_Causal | grep -qF '{"float":"-inf"}' || fail "-inf not written as {\"float\": \"-inf\"}"
record 1_LSTM | grep -qF '"op":"aten::_assert_tensor_metadata"' || fail "the op that returns nothing was dropped"
record 1_LSTM | grep -qF '"out":[]' || fail "a node that returns nothing has an empty out"
record 2_GRUState | grep -qF '"kind":"task"' || fail "state updated in forward: $(record 2_GRUState | cut -c1-300)"
record 4_Einops | grep -qF '"kind":"task"' || fail "einops: $(record 4_Einops | cut -c1-300)"
# --scale 4 is a ceiling: the pooling chain empties at 4 and 3, and imports at 2; the others at 4.
record 5_PoolChain | grep -qF '"scale":2' || fail "PoolChain's scale: $(record 5_PoolChain | grep -o '"scale":[0-9]*')"
record 3_Causal | grep -qF '"scale":4' || fail "Causal's scale"
"$python" "$CA_SOURCE_DIR/bridge/check_import.py" "$WORK/out/tasks.jsonl" "$WORK/dump" >"$WORK/check" 2>&1 ||
  fail "check_import: $(tail -3 "$WORK/check")"
grep -qF "level 3: imported 5 of 5, equal 5" "$WORK/check" || fail "not all equal to eager: $(tail -3 "$WORK/check")"

# The workspace's model.py of a task with -inf and an op that returns nothing runs and matches its task.
for id in 3_Causal 1_LSTM; do
  run "$CA_BIN/ca-sandbox" create "$WORK/out/tasks.jsonl" --dir "$WORK/ws" --id "kernelbench-level3-$id" --backend cpu
  expect_code 0
  ws=$WORK/ws/kernelbench-level3-$id
  (cd "$ws" && "$python" -c 'import model; m = model.Model(); print(m(*model.get_inputs()).shape)') >"$WORK/py" 2>&1 ||
    fail "$id model.py does not run: $(tail -2 "$WORK/py")"
done
grep -q "float('-inf')" "$WORK/ws/kernelbench-level3-3_Causal/model.py" || fail "model.py lacks float('-inf')"
finish
