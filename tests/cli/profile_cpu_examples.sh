# The CPU example candidates through `ca-verify | ca-profile | ca-reward`, with
# the compiled baseline: every verdict and reward is the one EXPECTED names,
# including the candidate that is honest only while verified (docs/EXPLOITS.md, B12).
# One thread each: ctest runs two tests at once on a 2-core machine, and OpenMP's
# two threads on a shared core made the timings (and so the rewards) a lottery.
. "$(dirname "$0")/lib.bash"
dir=$CA_SOURCE_DIR/examples/candidates/cpu

"$CA_BIN/ca-verify" --tasks "$dir/tasks.jsonl" --timeout 10 "$dir/candidates.jsonl" 2>"$WORK/verify_err" |
  "$CA_BIN/ca-profile" --tasks "$dir/tasks.jsonl" --timeout 20 --min-ms 20 --threads 1 2>"$WORK/profile_err" |
  "$CA_BIN/ca-reward" >"$WORK/rewarded.jsonl" 2>"$WORK/reward_err"
codes=("${PIPESTATUS[@]}")
[ "${codes[0]}" -eq 0 ] || fail "ca-verify exited ${codes[0]}: $(head -3 "$WORK/verify_err")"
[ "${codes[1]}" -eq 0 ] || fail "ca-profile exited ${codes[1]}: $(head -3 "$WORK/profile_err")"
[ "${codes[2]}" -eq 0 ] || fail "ca-reward exited ${codes[2]}: $(head -3 "$WORK/reward_err")"

python3 "$CA_SOURCE_DIR/tests/cli/check_examples.py" "$WORK/rewarded.jsonl" "$(grep -c . "$dir/EXPECTED")" profile ||
  fail "verdicts or rewards differ from EXPECTED"
python3 - "$WORK/rewarded.jsonl" <<'PY' || fail "profiles lack a field"
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    p = r["profile"]
    if not r["verify"]["ok"]:
        assert p == {"ok": False, "skipped": "verification failed"}, r["id"]
        continue
    if p["ok"]:
        assert p["times_us"]["candidate"] > p["floor_us"] > 0, r["id"]
        assert p["times_us"]["compile"] is not None, f"{r['id']}: no compile baseline: {p.get('compile_error')}"
        assert p["precision"] == "pytorch" and p["backend"] == "cpu", r["id"]
PY
finish
