# ca-sandbox's failures end with the exit table's codes and a line that says why (issue 24 item 7): a folder that
# cannot be made is an I/O error (74) once, not a failed record; a memory limit too small for bubblewrap itself is
# a setup failure (74) that names the limit, not a segfault (139).
. "$(dirname "$0")/lib.bash"
dir=$CA_SOURCE_DIR/examples/candidates/cpu

run "$CA_BIN/ca-sandbox" create "$dir/tasks.jsonl" --dir /proc/ca-no-such/x --id example/relu_rand
expect_code 74; expect_stderr "ca-sandbox: error: /proc/ca-no-such/x:"
[ "$(wc -l <"$WORK/stderr")" -eq 1 ] || fail "expected one error line for the folder"

run "$CA_BIN/ca-sandbox" create "$dir/tasks.jsonl" --dir "$WORK/ws" --id example/relu_rand
expect_code 0
ws=$WORK/ws/example_relu_rand
run "$CA_BIN/ca-sandbox" pack "$ws" -o "$WORK/ws.tar.gz"
expect_code 0
run "$CA_BIN/ca-sandbox" unpack "$WORK/ws.tar.gz" -o /proc/ca-no-such/x
expect_code 74; expect_stderr "No such file or directory"
# A bad archive is still a data error.
echo "not a tar" >"$WORK/bad.tar.gz"
run "$CA_BIN/ca-sandbox" unpack "$WORK/bad.tar.gz" -o "$WORK/out"
expect_code 65

run "$CA_BIN/ca-sandbox" exec --memory 1K "$ws" -- /bin/true
expect_code 74; expect_stderr "before it started the command; the memory limit (1024 bytes) is likely too small"
# The command's own signal is still its exit status, as in a shell.
run "$CA_BIN/ca-sandbox" exec "$ws" -- sh -c 'kill -SEGV $$'
expect_code 139
run "$CA_BIN/ca-sandbox" exec --memory 64M "$ws" -- /bin/true
expect_code 0
finish
