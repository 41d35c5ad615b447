# The warm judge (ca-judge serve) gives the cold tools' judgement: every CPU example candidate through
# `ca-judge ask verify | ca-judge ask profile | ca-reward` gets the verdict and reward EXPECTED names (each crash,
# hang and cheat included, as profile_cpu_examples.sh shows for ca-verify | ca-profile), and with the same --seed a
# warm verify record is the cold ca-verify's, field for field (but whether the build was cached).
. "$(dirname "$0")/lib.bash"
dir=$CA_SOURCE_DIR/examples/candidates/cpu
export CA_LOCK_DIR=$WORK

"$CA_BIN/ca-judge" --seed 7 serve --socket "$WORK/judge.sock" --tasks "$dir/tasks.jsonl" --timeout 20 --min-ms 20 \
  --threads 1 >"$WORK/serve_out" 2>"$WORK/serve_err" &
judge=$!
until grep -q "listening on" "$WORK/serve_out" 2>/dev/null || ! kill -0 "$judge" 2>/dev/null; do sleep 0.1; done
grep -q "listening on $WORK/judge.sock" "$WORK/serve_out" || fail "ca-judge serve did not start: $(head -3 "$WORK/serve_err")"

"$CA_BIN/ca-judge" ask --socket "$WORK/judge.sock" verify "$dir/candidates.jsonl" 2>"$WORK/verify_err" |
  "$CA_BIN/ca-judge" ask --socket "$WORK/judge.sock" profile 2>"$WORK/profile_err" |
  "$CA_BIN/ca-reward" >"$WORK/rewarded.jsonl" 2>"$WORK/reward_err"
codes=("${PIPESTATUS[@]}")
[ "${codes[0]}" -eq 0 ] || fail "ask verify exited ${codes[0]}: $(head -3 "$WORK/verify_err")"
[ "${codes[1]}" -eq 0 ] || fail "ask profile exited ${codes[1]}: $(head -3 "$WORK/profile_err")"
[ "${codes[2]}" -eq 0 ] || fail "ca-reward exited ${codes[2]}: $(head -3 "$WORK/reward_err")"
python3 "$CA_SOURCE_DIR/tests/cli/check_examples.py" "$WORK/rewarded.jsonl" "$(grep -c . "$dir/EXPECTED")" profile ||
  fail "warm verdicts or rewards differ from EXPECTED"

# Same seed, same records: the warm verify is the cold one (the cheaters and the crash among them).
grep -E '"id":"cpu/(relu_rand__(correct|identity|caches_outputs|modifies_input|forges_report)|conv_relu_pool__segfault)"' \
  "$dir/candidates.jsonl" >"$WORK/some.jsonl"
"$CA_BIN/ca-verify" --seed 7 --tasks "$dir/tasks.jsonl" --timeout 20 "$WORK/some.jsonl" >"$WORK/cold.jsonl" \
  2>"$WORK/cold_err" || fail "cold ca-verify failed: $(head -3 "$WORK/cold_err")"
"$CA_BIN/ca-judge" ask --socket "$WORK/judge.sock" verify "$WORK/some.jsonl" >"$WORK/warm.jsonl" 2>"$WORK/warm_err" ||
  fail "warm verify failed: $(head -3 "$WORK/warm_err")"
python3 - "$WORK/cold.jsonl" "$WORK/warm.jsonl" <<'PY' || fail "warm and cold verify records differ"
import json, sys
def records(path):
    out = {}
    for line in open(path):
        r = json.loads(line)
        r["verify"].get("build", {}).pop("cached", None)
        out[r["id"]] = r
    return out
cold, warm = records(sys.argv[1]), records(sys.argv[2])
assert len(cold) == 6 and cold.keys() == warm.keys(), (sorted(cold), sorted(warm))
for key in cold:
    assert cold[key] == warm[key], (key, cold[key]["verify"], warm[key]["verify"])
PY

kill -TERM "$judge"
wait "$judge"
code=$?
expect_code 130
[ ! -e "$WORK/judge.sock" ] || fail "the socket outlived its judge"
finish
