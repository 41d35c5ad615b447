# ca-synth composes tasks that check as ca-crawl tasks checks them, with
# unique fingerprints, reproducibly from --seed; bad flags and inputs are
# reported (file:line for a bad op record), and an unreachable --llm endpoint
# is counted, not fatal.
. "$(dirname "$0")/lib.bash"
synth=$CA_BIN/ca-synth
"$CA_BIN/ca-crawl" ops --usable >"$WORK/ops.jsonl" || fail "ca-crawl ops"
small=(--cost-model cpu --target-ms 0.05)

run "$synth" -n 20 --seed 3 "${small[@]}" -o "$WORK/a.jsonl" "$WORK/ops.jsonl"
expect_code 0; expect_stderr "ca-synth: note: 20 tasks in"; expect_stderr "candidate nodes accepted"
[ "$(wc -l <"$WORK/a.jsonl")" -eq 20 ] || fail "expected 20 tasks"
grep -q '"source":"synth"' "$WORK/a.jsonl" || fail "no source field"

# Reproducible: same seed, same bytes (ops from stdin this time); -n 5 is a prefix.
run "$synth" -n 20 --seed 3 "${small[@]}" - <"$WORK/ops.jsonl"
cmp -s "$WORK/stdout" "$WORK/a.jsonl" || fail "same seed gave different output"
run "$synth" -n 5 --seed 3 "${small[@]}" "$WORK/ops.jsonl"
cmp -s "$WORK/stdout" <(head -5 "$WORK/a.jsonl") || fail "-n 5 is not a prefix of -n 20"
run "$synth" -n 5 --seed 4 "${small[@]}" "$WORK/ops.jsonl"
cmp -s "$WORK/stdout" <(head -5 "$WORK/a.jsonl") && fail "another seed gave the same tasks"

# Every task passes ca-crawl tasks unchanged in meta; no fingerprint twice.
run "$CA_BIN/ca-crawl" tasks "$WORK/a.jsonl"
expect_code 0
cmp -s "$WORK/stdout" "$WORK/a.jsonl" || fail "ca-crawl tasks changed the records"
dups=$(grep -o '"fingerprint":"sha256:[0-9a-f]*"' "$WORK/a.jsonl" | sort | uniq -d)
[ -z "$dups" ] || fail "repeated fingerprints: $dups"

run "$synth" -n 4 --mix 0,0,1,0,0 "${small[@]}" "$WORK/ops.jsonl"
expect_code 0
[ "$(grep -c '"op_count":3' "$WORK/stdout")" -eq 4 ] || fail "--mix 0,0,1,0,0 gave other op counts"

run "$synth" --mix 1,2,3 "$WORK/ops.jsonl"
expect_code 64; expect_stderr "ca-synth: error: --mix: expected 5 numbers (tasks of 1..5 ops), got 3"
run "$synth" --cost-model h100 "$WORK/ops.jsonl"
expect_code 64; expect_stderr "did you mean 'h200'"
run "$synth" --model m "$WORK/ops.jsonl"
expect_code 64; expect_stderr "--model, --modules, --prompts, --llm-jobs and --max-tokens need --llm"

run "$synth" -o "$WORK/none.jsonl" "$WORK/missing.jsonl"
expect_code 66; expect_stderr "$WORK/missing.jsonl"
[ ! -e "$WORK/none.jsonl" ] || fail "output written for a missing input"
{ head -1 "$WORK/ops.jsonl"; echo '{"kind":"op","name":"aten::relu","overload":""}'; } >"$WORK/bad.jsonl"
run "$synth" "$WORK/bad.jsonl"
expect_code 65; expect_stderr "ca-synth: error: $WORK/bad.jsonl:2: category: missing field"
{ head -1 "$WORK/ops.jsonl"; echo '{"kind":"op", broken'; } >"$WORK/bad.jsonl"
run "$synth" "$WORK/bad.jsonl"
expect_code 65; expect_stderr "$WORK/bad.jsonl:2: invalid JSON"

# Nothing listens on port 1: every request fails, is counted, and the run ends with 1.
run "$synth" --llm http://127.0.0.1:1/v1 --model m -n 2 "$WORK/ops.jsonl"
expect_code 1; expect_stderr "0 tasks from 6 requests (0 answers); failed: http 6"
[ "$(stdout_lines)" -eq 0 ] || fail "tasks from an unreachable endpoint"
finish
