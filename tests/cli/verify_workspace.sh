# An agent's loop: make a workspace, write a kernel, run plain ca-verify
# there, read [PASS]/[FAIL] lines; symlinks in kernels/ are refused.
. "$(dirname "$0")/lib.bash"
dir=$CA_SOURCE_DIR/examples/candidates/cpu

run "$CA_BIN/ca-sandbox" create "$dir/tasks.jsonl" --dir "$WORK/ws" --id example/relu_rand
expect_code 0
ws=$WORK/ws/example_relu_rand
[ -f "$ws/SKILL.md" ] && [ -f "$ws/model.py" ] && [ -f "$ws/task.json" ] || fail "workspace incomplete"

run "$CA_BIN/ca-verify" --workspace "$ws"
expect_code 66; expect_stderr "no kernel files yet"

cp "$dir/relu_rand__correct.cpp" "$ws/kernels/relu.cpp"
run "$CA_BIN/ca-verify" --workspace "$ws"
expect_code 0; expect_stdout "[PASS] compare: 5 trials"
grep -q FAIL "$WORK/stdout" && fail "a correct kernel printed FAIL"

cp "$dir/relu_rand__identity.cpp" "$ws/kernels/relu.cpp"
run "$CA_BIN/ca-verify" --workspace "$ws"
expect_code 1; expect_stdout "[FAIL] compare: trial"
[ "$(grep -c FAIL "$WORK/stdout")" -eq 1 ] || fail "expected exactly one FAIL line"

rm "$ws/kernels/relu.cpp"
ln -s /etc/passwd "$ws/kernels/relu.cpp"
run "$CA_BIN/ca-verify" --workspace "$ws"
expect_code 66; expect_stderr "symbolic links are not allowed"
finish
