# An agent's loop: make a workspace, write a kernel, run plain ca-verify
# there, read [PASS]/[FAIL] lines; symlinks in kernels/ are refused; trials
# wait while a profile holds the device's lease.
. "$(dirname "$0")/lib.bash"
dir=$CA_SOURCE_DIR/examples/candidates/cpu
export CA_LOCK_DIR=$WORK

run "$CA_BIN/ca-sandbox" create "$dir/tasks.jsonl" --dir "$WORK/ws" --id example/relu_rand --backend cpu
expect_code 0
ws=$WORK/ws/example_relu_rand
[ -f "$ws/SKILL.md" ] && [ -f "$ws/model.py" ] && [ -f "$ws/task.json" ] || fail "workspace incomplete"

run "$CA_BIN/ca-verify" --workspace "$ws"
expect_code 66; expect_stderr "no kernel files yet"

cp "$dir/relu_rand__correct.cpp" "$ws/kernels/relu.cpp"
run "$CA_BIN/ca-verify" --workspace "$ws"
expect_code 0; expect_stdout "[PASS] compare: 5 trials"
grep -q FAIL "$WORK/stdout" && fail "a correct kernel printed FAIL"

# The lease (timing/lease.h): trials wait while a profile holds the device exclusive...
hold_lease
"$CA_BIN/ca-verify" --workspace "$ws" >"$WORK/stdout" 2>"$WORK/stderr" 9>&- &
pid=$!
waiting_for_lease "$pid" || fail "ca-verify ended without waiting for a profile's lease"
[ -s "$WORK/stdout" ] && fail "ca-verify reported while a profile held the lease"
release_lease
wait "$pid"; code=$?
expect_code 0; expect_stdout "[PASS] compare: 5 trials"
# ...but not for another verify job, which holds it shared (a wait would never end: this shell holds it).
exec 9>"$WORK/cuda-agent-cpu.lock"
flock -s 9
run timeout -k 5 60 "$CA_BIN/ca-verify" --workspace "$ws"
expect_code 0
exec 9>&-
# A verify job waiting for the device still stops when asked to (its handler is installed before it waits).
hold_lease
"$CA_BIN/ca-verify" --workspace "$ws" >/dev/null 2>"$WORK/stderr" 9>&- &
pid=$!
waiting_for_lease "$pid" || fail "ca-verify ended without waiting for the lease"
kill -TERM "$pid"
timeout -k 5 10 tail --pid="$pid" -f /dev/null || fail "ca-verify did not stop while waiting for the lease"
wait "$pid"
code=$?
expect_code 130; expect_stderr "interrupted while waiting for the device"
release_lease

cp "$dir/relu_rand__identity.cpp" "$ws/kernels/relu.cpp"
run "$CA_BIN/ca-verify" --workspace "$ws"
expect_code 1; expect_stdout "[FAIL] compare: trial"
[ "$(grep -c FAIL "$WORK/stdout")" -eq 1 ] || fail "expected exactly one FAIL line"

rm "$ws/kernels/relu.cpp"
ln -s /etc/passwd "$ws/kernels/relu.cpp"
run "$CA_BIN/ca-verify" --workspace "$ws"
expect_code 66; expect_stderr "symbolic links are not allowed"
finish
