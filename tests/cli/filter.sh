# ca-filter keeps good tasks and rejects each hand-made degenerate one with its
# reason (examples/filter/tasks.jsonl): a constant output, an output not
# depending on a param, an identically-zero output where the zeros control
# passes, a near-constant one (mean control), a passthrough, an output that is
# float32 rounding noise (noise-output), a random op, NaN,
# a program that does not run, a duplicate, a near-duplicate, a task like the
# reference set; the runtime window; the device lease; and the failure paths.
. "$(dirname "$0")/lib.bash"
filter=$CA_BIN/ca-filter
tasks=$CA_SOURCE_DIR/examples/filter/tasks.jsonl
reference=$CA_SOURCE_DIR/examples/filter/reference.jsonl

# verdict ID: the reason the rejects file gives the task, or "kept".
verdict() {
  if grep -q "\"id\":\"$1\"" "$WORK/kept.jsonl"; then echo kept; return; fi
  grep "\"id\":\"$1\"" "$WORK/rejects.jsonl" | grep -o '"reject":{"reason":"[a-z-]*"' | cut -d'"' -f6
}
expect_verdict() { [ "$(verdict "$1")" = "$2" ] || fail "$1: got '$(verdict "$1")', expected $2"; }

run "$filter" --min-ms 0 --reference "$reference" --rejects "$WORK/rejects.jsonl" -o "$WORK/kept.jsonl" "$tasks"
expect_code 0
expect_stderr "ca-filter: note: kept 2 of 14; rejected: eager-error 1, random-op 1, duplicate 1, contaminated 1, non-finite 1, control-zeros 1, degenerate-constant 1, ignores-input 1, control-mean 1, control-passthrough 1, noise-output 1, near-duplicate 1"
expect_verdict filter/linear_gelu kept
expect_verdict filter/sigmoid_scale kept
expect_verdict filter/renamed_copy duplicate
expect_verdict filter/sigmoid_scale4 near-duplicate
expect_verdict filter/sub_self_plus_one degenerate-constant
expect_verdict filter/min_zero_clamp control-zeros
expect_verdict filter/ignores_weight ignores-input
expect_verdict filter/near_constant control-mean
expect_verdict filter/almost_identity control-passthrough
expect_verdict filter/dropout random-op
expect_verdict filter/log_negative non-finite
expect_verdict filter/no_such_op eager-error
expect_verdict filter/relu_alone contaminated
expect_verdict filter/centered_mean noise-output
grep -q '"reject":{"reason":"contaminated","detail":"op-shingle similarity 1.00 to kernelbench-level1-19_ReLU' "$WORK/rejects.jsonl" ||
  fail "contamination detail"
grep -q '"detail":"no output changes when param .w. is redrawn"' "$WORK/rejects.jsonl" || fail "ignores-input detail"
grep -q '"reason":"noise-output","detail":"output 0: rounding noise: the float64 run, rounded, fails verification at 0.5 of the tolerance: normalized error' \
  "$WORK/rejects.jsonl" || fail "noise-output detail"
# Kept tasks carry the measurement and the filter's record; every line is valid JSON.
"$(torch_python)" - "$WORK/kept.jsonl" <<'PY' || fail "kept records lack eager_ms/filter"
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    assert r["meta"]["eager_ms"] > 0 and r["filter"]["device"] == "cpu" and "reject" not in r, r
    assert 0 <= r["filter"]["rounding"] < 1e-5, r  # float32 rounding of a float64 run: a few ulps
PY

# Judging holds the device's lease shared (timing/lease.h): it waits while a profile holds it exclusive.
export CA_LOCK_DIR=$WORK
hold_lease
"$filter" --min-ms 0 -o "$WORK/one.jsonl" <(grep -m1 '"filter/linear_gelu"' "$tasks") 2>"$WORK/stderr" 9>&- &
pid=$!
waiting_for_lease "$pid" || fail "ca-filter ended without waiting for a profile's lease"
[ -e "$WORK/one.jsonl" ] && fail "ca-filter judged while a profile held the lease"
release_lease
wait "$pid"; code=$?
expect_code 0

# SIGTERM while it waits: exit 130, a summary that says so, and no output file.
hold_lease
"$filter" --min-ms 0 -o "$WORK/stopped.jsonl" <(grep -m1 '"filter/linear_gelu"' "$tasks") 2>"$WORK/stopped.err" 9>&- &
stopped=$!
waiting_for_lease "$stopped" || fail "ca-filter ended without waiting for the lease"
kill -TERM $stopped
wait $stopped; code=$?
[ $code -eq 130 ] || fail "interrupted ca-filter exited $code, expected 130"
grep -q "ca-filter: note: interrupted; so far kept 0 of 0" "$WORK/stopped.err" || fail "interrupted summary: $(cat "$WORK/stopped.err")"
[ ! -e "$WORK/stopped.jsonl" ] || fail "an interrupted ca-filter left its output file"
release_lease

# Without --reference ReLU alone is no longer contaminated, but on its rand inputs (the distribution ca-profile times)
# it is its input: the passthrough control passes there. The examples' outputs are what the documented command makes
# (modulo times).
run "$filter" --min-ms 0 --rejects "$WORK/noref_rejects.jsonl" "$tasks"
expect_code 0; expect_stderr "kept 2 of 14"
grep -q '"id":"filter/relu_alone".*"reject":{"reason":"control-passthrough","detail":"output 0: input .x. passed through passes verification on the timed inputs' \
  "$WORK/noref_rejects.jsonl" || fail "relu of rand inputs not rejected as a passthrough without a reference"
ids() { grep -o '"id":"[^"]*"' "$1" | tr '\n' ' '; }
[ "$(ids "$WORK/kept.jsonl")" = "$(ids "$CA_SOURCE_DIR/examples/filter/kept.jsonl")" ] || fail "examples/filter/kept.jsonl is stale"
[ "$(ids "$WORK/rejects.jsonl")" = "$(ids "$CA_SOURCE_DIR/examples/filter/rejects.jsonl")" ] || fail "examples/filter/rejects.jsonl is stale"

# The runtime window: everything here is far below 1 s, and the default CPU floor is stated in the detail.
run "$filter" --min-ms 1000 --rejects "$WORK/slow.jsonl" "$tasks"
expect_code 0; expect_stderr "too-fast 3"
grep -q '"reason":"too-fast","detail":"eager [0-9.e-]* ms (window 1000-1000 ms' "$WORK/slow.jsonl" || fail "too-fast detail"
run "$filter" --min-ms 0 --max-ms 1e-9 --rejects "$WORK/slow.jsonl" "$tasks"
expect_code 0; expect_stderr "too-slow 3"

# --compile: a bridge that fails (CA_PYTHON=/bin/false, an empty cache) is the task's compile-error.
head -1 "$tasks" >"$WORK/one.jsonl"
run env CA_CACHE_DIR="$WORK/cache" CA_PYTHON=/bin/false "$filter" --compile --min-ms 0 --rejects "$WORK/compile.jsonl" "$WORK/one.jsonl"
expect_code 0; expect_stderr "kept 0 of 1; rejected: compile-error 1"
grep -q '"reason":"compile-error"' "$WORK/compile.jsonl" || fail "no compile-error reject"
# All baselines compile first, in one bridge process per -j, and a failed one is not tried again when its task
# (or a renamed copy of its program) is judged: one bridge call for the three tasks.
head -3 "$tasks" >"$WORK/three.jsonl"
printf '#!/bin/sh\necho "$@" >>"%s/bridge-calls"\nexit 1\n' "$WORK" >"$WORK/python" && chmod +x "$WORK/python"
run env CA_CACHE_DIR="$WORK/cache3" CA_PYTHON="$WORK/python" "$filter" --compile -j 1 --min-ms 0 "$WORK/three.jsonl"
expect_code 0; expect_stderr "kept 0 of 3; rejected: duplicate 1, compile-error 2"
[ "$(grep -c -- '--batch' "$WORK/bridge-calls")" -eq 1 ] || fail "expected one bridge call: $(cat "$WORK/bridge-calls")"

# Deterministic verdicts: the same input gives the same kept ids and reject reasons.
run "$filter" --min-ms 0 --reference "$reference" --rejects "$WORK/rejects2.jsonl" -o "$WORK/kept2.jsonl" "$tasks"
[ "$(ids "$WORK/kept2.jsonl")" = "$(ids "$WORK/kept.jsonl")" ] || fail "a second run kept other tasks"
cmp -s <(grep -o '"reject":{[^}]*}' "$WORK/rejects.jsonl") <(grep -o '"reject":{[^}]*}' "$WORK/rejects2.jsonl") || fail "reasons changed"

# Records that cannot be judged: reported as file:line, skipped, exit 1; --fail-fast stops with 65.
{ head -1 "$tasks"; echo '{"kind":"op","name":"aten::relu"}'; echo '{"kind":"task", broken'; echo '{"kind":"task","id":"no_program"}'; } >"$WORK/bad.jsonl"
run "$filter" --min-ms 0 -o "$WORK/out.jsonl" "$WORK/bad.jsonl"
expect_code 1
expect_stderr "ca-filter: error: $WORK/bad.jsonl:2: kind: expected \"task\", got \"op\""
expect_stderr "$WORK/bad.jsonl:3: invalid JSON"
expect_stderr "$WORK/bad.jsonl:4: program: missing field"
expect_stderr "kept 1 of 1; rejected: none; not judged: 3"
[ "$(wc -l <"$WORK/out.jsonl")" -eq 1 ] || fail "the good record was not kept"
run "$filter" --min-ms 0 --fail-fast -o "$WORK/ff.jsonl" "$WORK/bad.jsonl"
expect_code 65
[ ! -e "$WORK/ff.jsonl" ] || fail "output written after --fail-fast stopped"

# Usage and input errors.
run "$filter" --device tpu "$tasks"
expect_code 64; expect_stderr "--device: expected cpu or cuda"
run "$filter" --min-ms 5 --max-ms 1 "$tasks"
expect_code 64; expect_stderr "--min-ms is above --max-ms"
run "$filter" --compile --no-compile "$tasks"
expect_code 64
run "$filter" --max-similarity 2 "$tasks"
expect_code 64
run "$filter" --rounding-share 1.5 "$tasks"
expect_code 64; expect_stderr "--rounding-share"
# --rounding-share 0 turns the check off: the noise task passes every other check and is kept.
run "$filter" --min-ms 0 --rounding-share 0 "$tasks"
expect_code 0; expect_stderr "kept 3 of 14"
grep -q '"id":"filter/centered_mean"' "$WORK/stdout" || fail "noise task not kept without the check"
run "$filter" -o "$WORK/none.jsonl" --rejects "$WORK/none_rejects.jsonl" "$WORK/missing.jsonl"
expect_code 66; expect_stderr "$WORK/missing.jsonl"
[ ! -e "$WORK/none.jsonl" ] && [ ! -e "$WORK/none_rejects.jsonl" ] || fail "output written for a missing input"
run "$filter" --reference "$WORK/missing.jsonl" "$tasks"
expect_code 66
echo '{"kind":"task","id":"r","program":{"inputs":[]' >"$WORK/badref.jsonl"
run "$filter" --reference "$WORK/badref.jsonl" "$tasks"
expect_code 65; expect_stderr "$WORK/badref.jsonl:1"
finish
