# ca-profile's checks and conventions: the agent's line in a workspace, the
# speed-of-light floor, the device lease, skipped and bad records, usage errors.
. "$(dirname "$0")/lib.bash"
dir=$CA_SOURCE_DIR/examples/candidates/cpu
relu() { grep "\"cpu/relu_rand__$1\"" "$dir/candidates.jsonl"; }
export CA_LOCK_DIR=$WORK
fast=(--tasks "$dir/tasks.jsonl" --no-compile --rounds 2)

# The agent's line, inside a workspace.
"$CA_BIN/ca-sandbox" create "$dir/tasks.jsonl" --dir "$WORK/ws" --id example/relu_rand --backend cpu >/dev/null
ws=$WORK/ws/example_relu_rand
cp "$dir/relu_rand__correct.cpp" "$ws/kernels/relu.cpp"
run "$CA_BIN/ca-profile" --workspace "$ws" --no-compile --rounds 2 --min-ms 2
expect_code 0
grep -qE '^Torch Baseline: [0-9.]+ us, Torch Compile: n/a, CUDA Extension: [0-9.]+ us$' "$WORK/stdout" ||
  fail "agent line: $(cat "$WORK/stdout")"

# A time below the speed-of-light floor is not real (docs/EXPLOITS.md, C10): with a
# bandwidth of 1 MB/s the floor of relu_rand is seconds.
relu correct >"$WORK/correct.jsonl"
run "$CA_BIN/ca-profile" "${fast[@]}" --min-ms 2 --peak-gbps 0.001 "$WORK/correct.jsonl"
expect_code 0
python3 - "$WORK/stdout" <<'PY' || fail "floor not enforced: $(head -c 400 "$WORK/stdout")"
import json, sys
p = json.loads(open(sys.argv[1]).read())["profile"]
assert p["ok"] is False and p["stage"] == "floor" and "speed-of-light" in p["message"], p
assert p["floor_us"] > 1e6, p["floor_us"]
PY
"$CA_BIN/ca-reward" <<<"$(sed 's/^{/{"verify":{"ok":true},/' "$WORK/stdout")" | grep -q '"value":-1' || fail "a floor failure must earn -1"

# --samples: every timed call's time, round by round; the medians are of every round but the first, which sizes
# the rest and is checked, not counted. Without --samples, none.
run "$CA_BIN/ca-profile" "${fast[@]}" --min-ms 2 --samples "$WORK/correct.jsonl"
expect_code 0
python3 - "$WORK/stdout" <<'PY' || fail "samples_us: $(head -c 600 "$WORK/stdout")"
import json, statistics, sys
p = json.loads(open(sys.argv[1]).read())["profile"]
assert p["ok"], p
for method in ("candidate", "eager"):
    rounds = p["samples_us"][method]
    assert len(rounds) == p["rounds"] == 2, rounds
    assert len(rounds[0]) == 2, ("the first round's two timed calls", rounds)
    flat = [t for r in rounds[1:] for t in r]
    assert len(flat) == p["count"][method] and all(t > 0 for t in flat), (method, rounds)
    assert statistics.median(flat) == p["times_us"][method], (method, statistics.median(flat), p["times_us"])
assert p["samples_us"]["compile"] == [[], []], p["samples_us"]["compile"]
began = p["samples_began"]
for method in ("candidate", "eager"):  # each round's part began after the last round's
    assert len(began[method]) == 2 and 0 < began[method][0] < began[method][1], began
PY
run "$CA_BIN/ca-profile" "${fast[@]}" --min-ms 2 "$WORK/correct.jsonl"
grep -q samples_us "$WORK/stdout" && fail "samples_us without --samples"

# --ci F: the rounds stop once every timed median is known within F of itself (95%), checked from the second counted
# round on; the record states the rounds run and each median's interval. Here F = 1 (100%), so 3 rounds of 6; --ci 0
# (the records' default) runs them all.
run "$CA_BIN/ca-profile" "${fast[@]}" --rounds 6 --max-calls 10 --min-ms 100000 --ci 1 "$WORK/correct.jsonl"
expect_code 0
python3 - "$WORK/stdout" 3 <<'PY' || fail "--ci 1: $(head -c 600 "$WORK/stdout")"
import json, sys
p = json.loads(open(sys.argv[1]).read())["profile"]
assert p["ok"] and p["rounds"] == int(sys.argv[2]), p
assert p["count"]["candidate"] == p["count"]["eager"] == 10 * (p["rounds"] - 1), p["count"]
assert 0 <= p["ci"]["candidate"] <= 1 and 0 <= p["ci"]["eager"] <= 1 and p["ci"]["compile"] is None, p["ci"]
PY
run "$CA_BIN/ca-profile" "${fast[@]}" --rounds 4 --max-calls 10 --min-ms 100000 "$WORK/correct.jsonl"
expect_code 0
python3 - "$WORK/stdout" <<'PY' || fail "--ci 0: $(head -c 600 "$WORK/stdout")"
import json, sys
p = json.loads(open(sys.argv[1]).read())["profile"]
assert p["ok"] and p["rounds"] == 4 and p["count"]["eager"] == 30 and p["ci"]["eager"] > 0, p
PY

# Timed calls are checked: a candidate right only for its first five calls
# passes ca-verify's five trials but not ca-profile (docs/EXPLOITS.md, B12).
relu honest_when_checked >"$WORK/honest.jsonl"
# Round 2 makes 1 + 8 calls whatever the machine's speed: more than the five the candidate is honest for.
run "$CA_BIN/ca-profile" "${fast[@]}" --min-ms 100000 --max-calls 8 "$WORK/honest.jsonl"
expect_code 0; expect_stdout '"stage":"compare"'

# The candidate cannot forge the runner's reports of its times (docs/EXPLOITS.md, C4): the forger of the examples, made to
# forge only after its fifth call, rewrites results.jsonl, which no longer carries any call's report (they come over
# the runner's pipe, and the time is the trusted side's): it profiles as the honest relu it is.
relu forges_report | python3 -c '
import json, sys
r = json.loads(sys.stdin.read())
(name, text), = r["files"].items()
r["files"] = {name: text.replace("  forge_last_report();", "  static int calls = 0;\n  if (++calls > 5) forge_last_report();")}
assert r["files"][name] != text
print(json.dumps(r))' >"$WORK/forger.jsonl"
"$CA_BIN/ca-verify" --tasks "$dir/tasks.jsonl" "$WORK/forger.jsonl" >"$WORK/forger_verified.jsonl" 2>/dev/null
grep -q '"verify":{"ok":true' "$WORK/forger_verified.jsonl" || fail "the late forger should pass verification: $(head -c 400 "$WORK/forger_verified.jsonl")"
run "$CA_BIN/ca-profile" "${fast[@]}" --min-ms 100000 --max-calls 8 "$WORK/forger_verified.jsonl"
expect_code 0
python3 -c 'import json, sys; p = json.load(open(sys.argv[1]))["profile"]; assert p["ok"], p' "$WORK/stdout" ||
  fail "the forger should profile as an honest relu: $(head -c 400 "$WORK/stdout")"

# One timing job per device: while another process holds the lease, ca-profile waits for it.
hold_lease
"$CA_BIN/ca-profile" "${fast[@]}" "$WORK/correct.jsonl" >"$WORK/stdout" 2>"$WORK/stderr" 9>&- &
pid=$!
waiting_for_lease "$pid" || fail "ca-profile ended without waiting for the lease"
[ -s "$WORK/stdout" ] && fail "ca-profile timed while another process held the lease"
release_lease
wait "$pid"; code=$?
expect_code 0

# A harness killed with SIGKILL cleans nothing up: its run directory (and the output region in it, RAM where it is
# in /dev/shm) stays until the next harness making one there finds that no process holds its owner.lock.
if [ -w /dev/shm ]; then
  "$CA_BIN/ca-profile" "${fast[@]}" --rounds 50 --min-ms 100000 "$WORK/correct.jsonl" >/dev/null 2>&1 &
  harness=$!
  # Its own run directory, by the lock it holds open (other tests may be making theirs meanwhile).
  left=
  while kill -0 "$harness" 2>/dev/null; do  # until it holds the lock, or ends
    lock=$(find "/proc/$harness/fd" -lname '/dev/shm/ca-run-*/owner.lock' -printf '%l\n' 2>/dev/null | head -1)
    [ -n "$lock" ] && left=${lock%/owner.lock} && break
    sleep 0.2  # a poll: what ends the loop is the state above
  done
  kill -9 "$harness"; wait "$harness" 2>/dev/null
  [ -n "$left" ] && [ -f "$left/owner.lock" ] || fail "no run directory of the killed harness in /dev/shm: '$left'"
  run "$CA_BIN/ca-profile" "${fast[@]}" "$WORK/correct.jsonl"
  expect_code 0
  [ -e "$left" ] && fail "the killed harness's run directory is still there: $left"
fi

# A record that failed verification is not timed; a record without its task is reported and skipped.
run "$CA_BIN/ca-profile" "${fast[@]}" <<<'{"kind":"candidate","task_id":"example/relu_rand","backend":"cpu","files":{"kernels/a.cpp":""},"verify":{"ok":false}}'
expect_code 0; expect_stdout '"profile":{"ok":false,"skipped":"verification failed"}'
run "$CA_BIN/ca-profile" "${fast[@]}" <<<'{"kind":"candidate","task_id":"nope","backend":"cpu","files":{"kernels/a.cpp":""}}'
expect_code 1; expect_stderr "<stdin>:1: task_id: no task 'nope'"

run "$CA_BIN/ca-profile" --rounds 0 "$WORK/correct.jsonl"
expect_code 64
run "$CA_BIN/ca-profile" --tasks "$WORK/missing.jsonl" "$WORK/correct.jsonl"
expect_code 66
finish
