# The cuda example candidates that the static check must refuse (EXPECTED verdict `static`: PyTorch headers, a stream
# of its own, cuBLAS moved to a leaked stream) are refused here too, where nothing runs on a GPU: the check reads
# sources and the built library only. The rest of the cuda examples run in tests/gpu.
. "$(dirname "$0")/lib.bash"
dir=$CA_SOURCE_DIR/examples/candidates/cuda

python3 "$CA_SOURCE_DIR/examples/candidates/pack.py" --check "$dir" || fail "candidates.jsonl is stale"
grep '"expect":"static"' "$dir/candidates.jsonl" >"$WORK/static.jsonl"
want=$(grep -c ' static ' "$dir/EXPECTED")
[ "$want" -ge 3 ] || fail "EXPECTED names $want static candidates, expected at least 3"

"$CA_BIN/ca-verify" --tasks "$dir/tasks.jsonl" --cuda-arch sm_90 "$WORK/static.jsonl" >"$WORK/verified.jsonl" \
  2>"$WORK/verify_err" || fail "ca-verify exited $?: $(head -3 "$WORK/verify_err")"
python3 - "$WORK/verified.jsonl" "$want" <<'PY' || fail "a cuda candidate was not refused at static"
import json, sys
records = [json.loads(line) for line in open(sys.argv[1])]
assert len(records) == int(sys.argv[2]), f"{len(records)} records, EXPECTED has {sys.argv[2]} static"
for r in records:
    v = r["verify"]
    assert not v["ok"] and v["stage"] == "static", f"{r['id']}: {v['stage']}: {v['message']}"
    print(f"{r['id']}: static: {v['message']}")
PY
finish
