# The CPU example candidates through `ca-verify | ca-reward`: every verdict
# and reward is the expected one (correct and fast, slow, wrong, partial, NaN,
# crash, hang, and each cheat).
. "$(dirname "$0")/lib.bash"
dir=$CA_SOURCE_DIR/examples/candidates/cpu

python3 "$CA_SOURCE_DIR/examples/candidates/pack.py" "$dir" >"$WORK/packed.jsonl"
cmp -s "$WORK/packed.jsonl" "$dir/candidates.jsonl" || fail "candidates.jsonl is stale: run examples/candidates/pack.py"

"$CA_BIN/ca-verify" --tasks "$dir/tasks.jsonl" --timeout 10 "$dir/candidates.jsonl" 2>"$WORK/verify_err" |
  "$CA_BIN/ca-reward" >"$WORK/rewarded.jsonl" 2>"$WORK/reward_err"
codes=("${PIPESTATUS[@]}")
[ "${codes[0]}" -eq 0 ] || fail "ca-verify exited ${codes[0]}: $(head -3 "$WORK/verify_err")"
[ "${codes[1]}" -eq 0 ] || fail "ca-reward exited ${codes[1]}: $(head -3 "$WORK/reward_err")"

python3 - "$WORK/rewarded.jsonl" <<'PY' || fail "verdicts differ from EXPECTED"
import json, sys
records = [json.loads(line) for line in open(sys.argv[1])]
assert len(records) == 19, f"{len(records)} records"
bad = 0
for r in records:
    v, expect = r["verify"], r["expect"]
    got = "PASS" if v["ok"] else v["stage"]
    reward = r["reward"]["value"]
    want_reward = 1 if expect == "PASS" else -1
    if got != expect or reward != want_reward:
        bad += 1
        print(f"{r['id']}: expected {expect} (reward {want_reward}), got {got} (reward {reward}): {v['message'][:300]}")
    if v["ok"]:
        assert len(v["trials"]) == 5 and all(t["ok"] for t in v["trials"]), r["id"]
sys.exit(1 if bad else 0)
PY
finish
