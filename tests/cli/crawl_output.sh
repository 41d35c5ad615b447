# Output behaves like a filter's: quiet on a closed pipe, an error on a full
# disk, and files appear only when complete.
. "$(dirname "$0")/lib.bash"
crawl=$CA_BIN/ca-crawl

"$crawl" ops 2>"$WORK/pipe_err" | head -1 >/dev/null
[ ! -s "$WORK/pipe_err" ] || fail "closed pipe printed: $(cat "$WORK/pipe_err")"

run "$crawl" ops -o /dev/full
expect_code 74; expect_stderr "writing output failed"

run "$crawl" ops -o "$WORK/ops.jsonl"
expect_code 0
[ "$(wc -l <"$WORK/ops.jsonl")" -gt 2000 ] || fail "-o file incomplete"
ls "$WORK" | grep -q 'tmp-' && fail "temporary file left behind"

run "$crawl" ops -o "$WORK/no/such/dir/ops.jsonl"
expect_code 74; expect_stderr "no/such/dir/ops.jsonl"
finish
