# ca-reward: the paper's rule over hand-made verify/profile records, variants,
# and bad input.
. "$(dirname "$0")/lib.bash"
reward=$CA_BIN/ca-reward
examples=$CA_SOURCE_DIR/examples/rewarded.jsonl

run "$reward" "$examples"
expect_code 0; expect_stderr_empty
values=$(grep -o '"reward":{"value":[-0-9.]*' "$WORK/stdout" | cut -d: -f3 | tr '\n' ' ')
[ "$values" = "-1 1 2 3 2 " ] || fail "paper rewards: got '$values'"
expect_stdout "capped at 2 without a compile baseline"

run "$reward" --rule binary "$examples"
values=$(grep -o '"reward":{"value":[-0-9.]*' "$WORK/stdout" | cut -d: -f3 | tr '\n' ' ')
[ "$values" = "-1 1 1 1 1 " ] || fail "binary rewards: got '$values'"

run "$reward" --eager-threshold 3 "$examples"
values=$(grep -o '"reward":{"value":[-0-9.]*' "$WORK/stdout" | cut -d: -f3 | tr '\n' ' ')
[ "$values" = "-1 1 1 1 1 " ] || fail "thresholds not applied: got '$values'"

run "$reward" --rule papr "$examples"
expect_code 64; expect_stderr "did you mean 'paper'?"

run "$reward" - <<<'{"kind":"candidate","task_id":"x"}'
expect_code 1; expect_stderr "<stdin>:1: verify: missing field (run ca-verify first)"

run "$reward" --help
expect_code 0; expect_stdout "--eager-threshold"
finish
