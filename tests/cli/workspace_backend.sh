# A workspace records the backend it was made for (workspace.json) and plain ca-verify/ca-profile --workspace judge
# it so, as its SKILL.md told the agent to write it; --backend still overrides. --workspace with FILE arguments is a
# usage error, not a silent ignore, and ca-verify reading records from a terminal says so (issue 24 items 6, 7).
. "$(dirname "$0")/lib.bash"
dir=$CA_SOURCE_DIR/examples/candidates/cpu
export CA_LOCK_DIR=$WORK

run "$CA_BIN/ca-sandbox" create "$dir/tasks.jsonl" --dir "$WORK/cpu" --id example/relu_rand --backend cpu
expect_code 0
run "$CA_BIN/ca-sandbox" create "$dir/tasks.jsonl" --dir "$WORK/cuda" --id example/relu_rand
expect_code 0
cpu=$WORK/cpu/example_relu_rand cuda=$WORK/cuda/example_relu_rand
grep -q '"backend": "cpu"' "$cpu/workspace.json" || fail "cpu workspace.json: $(cat "$cpu/workspace.json")"
grep -q '"backend": "cuda"' "$cuda/workspace.json" || fail "cuda workspace.json: $(cat "$cuda/workspace.json")"
grep -q 'Put `.cu` files' "$cuda/SKILL.md" || fail "a cuda workspace's SKILL.md asks for .cu files"

cp "$dir/relu_rand__correct.cpp" "$cpu/kernels/relu.cpp"
run "$CA_BIN/ca-verify" --workspace "$cpu"
expect_code 0; expect_stdout "[PASS] compare: 5 trials"
# The same .cpp in a cuda workspace is judged as cuda (nvcc builds .cu files only), unless --backend says otherwise.
cp "$dir/relu_rand__correct.cpp" "$cuda/kernels/relu.cpp"
run "$CA_BIN/ca-verify" --workspace "$cuda"
expect_code 1; expect_stdout "[FAIL] compile:"
run "$CA_BIN/ca-verify" --workspace "$cuda" --backend cpu
expect_code 0; expect_stdout "[PASS] compare: 5 trials"
run "$CA_BIN/ca-profile" --workspace "$cpu" --no-compile --rounds 2 --min-ms 2
expect_code 0; expect_stdout "Torch Baseline:"
# A workspace.json naming no known backend is a data error that names the file.
chmod u+w "$cuda"
echo '{"backend": "opencl"}' >"$cuda/workspace.json"
run "$CA_BIN/ca-verify" --workspace "$cuda"
expect_code 65; expect_stderr "workspace.json: backend: must be one of"

# --workspace W FILE: FILE would be ignored; say so.
grep -F '"id":"cpu/relu_rand__correct"' "$dir/candidates.jsonl" >"$WORK/c.jsonl"
for tool in ca-verify ca-profile; do
  run "$CA_BIN/$tool" --workspace "$cpu" "$WORK/c.jsonl"
  expect_code 64; expect_stderr "would be ignored: give FILE... or --workspace, not both"
done

# No arguments, outside a workspace, standard input a terminal: a note says what it waits for; Ctrl-D ends it.
cd "$WORK" || exit 1
python3 - "$CA_BIN/ca-verify" >"$WORK/tty" 2>&1 <<'PY' || fail "on a terminal: $(cat "$WORK/tty")"
import os, pty, select, sys
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], [sys.argv[1]])
seen = b""
while b"Ctrl-D" not in seen:  # wait for the state (the note), not a time
    ready, _, _ = select.select([fd], [], [], 60)
    if not ready:
        sys.exit("no note within 60 s: " + seen.decode(errors="replace"))
    seen += os.read(fd, 4096)
os.write(fd, b"\x04")  # end of input at the terminal
_, status = os.waitpid(pid, 0)
print(seen.decode(errors="replace"))
sys.exit(0 if os.waitstatus_to_exitcode(status) == 0 else "exit " + str(os.waitstatus_to_exitcode(status)))
PY
grep -q "ca-verify: note: reading candidate records (JSONL) from standard input, a terminal" "$WORK/tty" ||
  fail "no hint on a terminal: $(cat "$WORK/tty")"
# Not a terminal: no note (pipelines stay quiet).
run "$CA_BIN/ca-verify" </dev/null
expect_code 0; expect_stderr_empty
finish
