#!/usr/bin/env bash
# The CUDA example candidates through `ca-verify | ca-profile | ca-reward` on a
# GPU: every verdict and reward is the one examples/candidates/cuda/EXPECTED
# names, and the tables of them and of the times are printed. Run by tests/gpu/run.sh; CA_BIN defaults to
# build-gpu/bin and CA_SOURCE_DIR to this checkout.
CA_SOURCE_DIR=${CA_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
CA_BIN=${CA_BIN:-$CA_SOURCE_DIR/build-gpu/bin}
export CA_SOURCE_DIR CA_BIN
. "$CA_SOURCE_DIR/tests/cli/lib.bash"
dir=$CA_SOURCE_DIR/examples/candidates/cuda

python3 "$CA_SOURCE_DIR/examples/candidates/pack.py" --check "$dir" || fail "candidates.jsonl is stale"

# A cache of its own, so every candidate is compiled here for this GPU; compiled baselines are kept across runs.
export CA_CACHE_DIR=$WORK/cache
compiled=${CA_COMPILED_CACHE:-$HOME/.cache/cuda-agent/compiled}
mkdir -p "$CA_CACHE_DIR" "$compiled" && ln -s "$compiled" "$CA_CACHE_DIR/compiled"
# Logs go where the caller keeps them, so a run cut off by a time limit still shows how far it got.
logs=${OUT:-$WORK}
start=$(date +%s)
# Each stage's records are kept as they come (tee), to show progress.
"$CA_BIN/ca-verify" -j 8 --tasks "$dir/tasks.jsonl" --timeout 20 --cuda-arch sm_90 "$dir/candidates.jsonl" 2>"$logs/verify_err.log" |
  tee "$logs/verified.jsonl" |
  "$CA_BIN/ca-profile" --tasks "$dir/tasks.jsonl" --timeout 60 --cuda-arch sm_90 ${PROFILE_FLAGS:-} 2>"$logs/profile_err.log" |
  tee "$logs/profiled.jsonl" |
  "$CA_BIN/ca-reward" >"$WORK/rewarded.jsonl" 2>"$logs/reward_err.log"
codes=("${PIPESTATUS[0]}" "${PIPESTATUS[2]}" "${PIPESTATUS[4]}")
echo "ca-verify | ca-profile | ca-reward took $(($(date +%s) - start)) s"
[ "${codes[0]}" -eq 0 ] || fail "ca-verify exited ${codes[0]}: $(head -3 "$logs/verify_err.log")"
[ "${codes[1]}" -eq 0 ] || fail "ca-profile exited ${codes[1]}: $(head -3 "$logs/profile_err.log")"
[ "${codes[2]}" -eq 0 ] || fail "ca-reward exited ${codes[2]}: $(head -3 "$logs/reward_err.log")"
cp "$WORK/rewarded.jsonl" "${OUT:-$WORK}/cuda_examples.jsonl" 2>/dev/null

python3 "$CA_SOURCE_DIR/tests/cli/check_examples.py" "$WORK/rewarded.jsonl" "$(grep -c . "$dir/EXPECTED")" profile ||
  fail "verdicts or rewards differ from EXPECTED"
python3 - "$WORK/rewarded.jsonl" <<'PY'
import json, sys
print(f"{'candidate':38} {'cand us':>10} {'eager us':>10} {'compile us':>10} {'spread':>7} {'count':>5} floor")
for line in open(sys.argv[1]):
    r = json.loads(line)
    p = r.get("profile", {})
    if not p.get("times_us"):
        continue
    t = p["times_us"]
    fmt = lambda v: f"{v:10.1f}" if isinstance(v, (int, float)) else f"{'n/a':>10}"
    print(f"{r['id']:38} {fmt(t['candidate'])} {fmt(t['eager'])} {fmt(t['compile'])} {p['spread']['candidate']:7.3f} "
          f"{p['count']['candidate']:5} {p['floor_us']:.1f} {p.get('compile_error', '')[:80]}")
PY
finish
