# SIGINT while a tool waits for its next record on stdin ends it with 130 (interrupted), not 74: the read's EINTR is
# the interruption. The test waits until the tool is blocked in read(2) on fd 0, a state, not a time.
. "$(dirname "$0")/lib.bash"
mkfifo "$WORK/in"
exec 3<>"$WORK/in"  # held open for writing, so the tool's read blocks instead of seeing end of input
head -1 "$CA_SOURCE_DIR/examples/rewarded.jsonl" >&3
"$CA_BIN/ca-reward" <"$WORK/in" >"$WORK/stdout" 2>"$WORK/stderr" &
pid=$!
blocked_on_stdin() { [ "$(cut -d' ' -f1,2 "/proc/$pid/syscall" 2>/dev/null)" = "0 0x0" ]; }
until blocked_on_stdin; do
  kill -0 "$pid" 2>/dev/null || { fail "ca-reward exited before reading"; finish; }
done
kill -INT "$pid"
wait "$pid"
code=$?
expect_code 130
[ "$(stdout_lines)" -eq 1 ] || fail "the record read before the signal was not written"
exec 3>&-
finish
