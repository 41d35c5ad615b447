# The CPU example candidates through `ca-verify | ca-reward`: every verdict
# and reward is the expected one (correct and fast, slow, wrong, partial, NaN,
# crash, hang, and each cheat).
. "$(dirname "$0")/lib.bash"
dir=$CA_SOURCE_DIR/examples/candidates/cpu

python3 "$CA_SOURCE_DIR/examples/candidates/pack.py" --check "$dir" || fail "candidates.jsonl is stale"

"$CA_BIN/ca-verify" --tasks "$dir/tasks.jsonl" --timeout 10 "$dir/candidates.jsonl" 2>"$WORK/verify_err" |
  "$CA_BIN/ca-reward" >"$WORK/rewarded.jsonl" 2>"$WORK/reward_err"
codes=("${PIPESTATUS[@]}")
[ "${codes[0]}" -eq 0 ] || fail "ca-verify exited ${codes[0]}: $(head -3 "$WORK/verify_err")"
[ "${codes[1]}" -eq 0 ] || fail "ca-reward exited ${codes[1]}: $(head -3 "$WORK/reward_err")"

python3 "$CA_SOURCE_DIR/tests/cli/check_examples.py" "$WORK/rewarded.jsonl" "$(grep -c . "$dir/EXPECTED")" verify ||
  fail "verdicts differ from EXPECTED"
finish
