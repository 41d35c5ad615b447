#!/usr/bin/env bash
# The CUDA example candidates through `ca-verify | ca-reward` on a GPU: every
# verdict and reward is the one examples/candidates/cuda/EXPECTED names, and the
# table of them is printed. Run by tests/gpu/run.sh; CA_BIN defaults to
# build-gpu/bin and CA_SOURCE_DIR to this checkout.
CA_SOURCE_DIR=${CA_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
CA_BIN=${CA_BIN:-$CA_SOURCE_DIR/build-gpu/bin}
export CA_SOURCE_DIR CA_BIN
. "$CA_SOURCE_DIR/tests/cli/lib.bash"
dir=$CA_SOURCE_DIR/examples/candidates/cuda

python3 "$CA_SOURCE_DIR/examples/candidates/pack.py" "$dir" >"$WORK/packed.jsonl"
cmp -s "$WORK/packed.jsonl" "$dir/candidates.jsonl" || fail "candidates.jsonl is stale: run examples/candidates/pack.py"

# A cache of its own, so every candidate is compiled here for this GPU.
export CA_CACHE_DIR=$WORK/cache
start=$(date +%s)
"$CA_BIN/ca-verify" --tasks "$dir/tasks.jsonl" --timeout 20 --cuda-arch sm_90 "$dir/candidates.jsonl" 2>"$WORK/verify_err" |
  "$CA_BIN/ca-reward" >"$WORK/rewarded.jsonl" 2>"$WORK/reward_err"
codes=("${PIPESTATUS[@]}")
echo "ca-verify | ca-reward took $(($(date +%s) - start)) s"
[ "${codes[0]}" -eq 0 ] || fail "ca-verify exited ${codes[0]}: $(head -3 "$WORK/verify_err")"
[ "${codes[1]}" -eq 0 ] || fail "ca-reward exited ${codes[1]}: $(head -3 "$WORK/reward_err")"

python3 - "$WORK/rewarded.jsonl" "$(grep -c . "$dir/EXPECTED")" <<'PY' || fail "verdicts differ from EXPECTED"
import json, sys
records = [json.loads(line) for line in open(sys.argv[1])]
bad = 0 if len(records) == int(sys.argv[2]) else 1
if bad:
    print(f"{len(records)} records, EXPECTED has {sys.argv[2]}")
print(f"{'candidate':34} {'expected':9} {'got':9} reward  message")
for r in records:
    v, expect = r["verify"], r["expect"]
    got = "PASS" if v["ok"] else v["stage"]
    reward = r["reward"]["value"]
    want_reward = 1 if expect == "PASS" else -1
    mark = "" if got == expect and reward == want_reward else "  <-- WRONG"
    print(f"{r['id']:34} {expect:9} {got:9} {reward:6}  {v['message'][:160]}{mark}")
    if mark:
        bad += 1
    if v["ok"] and not (len(v["trials"]) == 5 and all(t["ok"] for t in v["trials"])):
        bad += 1
        print(f"{r['id']}: passed without 5 good trials")
sys.exit(1 if bad else 0)
PY
finish
