# ca-sandbox follows the shared CLI conventions (help, version, usage errors,
# missing inputs, bad records), and its snapshots round-trip.
. "$(dirname "$0")/lib.bash"
sandbox=$CA_BIN/ca-sandbox
examples=$CA_SOURCE_DIR/examples/tasks.jsonl

run "$sandbox" --help
expect_code 0; expect_stderr_empty
for word in create exec pack unpack --jobs --seed; do expect_stdout "$word"; done
run "$sandbox" exec --help
expect_code 0; for flag in --gpu --wall --cpu --memory --processes --file-size; do expect_stdout "$flag"; done

run "$sandbox" --version
expect_code 0; expect_stdout "ca-sandbox (cuda-agent)"

run "$sandbox" --bogus create
expect_code 64; expect_stderr "ca-sandbox: error:"; expect_stderr "try 'ca-sandbox --help'"
[ "$(wc -l <"$WORK/stderr")" -le 2 ] || fail "usage error longer than 2 lines"
run "$sandbox" exex "$WORK" -- true
expect_code 64; expect_stderr "did you mean 'exec'?"
run "$sandbox"
expect_code 64; expect_stderr "ca-sandbox: error:"
run "$sandbox" create "$examples" --dir "$WORK/ws" --backend opencl
expect_code 64; expect_stderr "opencl"
run "$sandbox" exec "$WORK" --wall -1 -- true
expect_code 64

# Missing inputs exit 66 and name the path.
run "$sandbox" exec "$WORK/missing" -- true
expect_code 66; expect_stderr "$WORK/missing"
run "$sandbox" exec "$WORK" -- true
expect_code 66; expect_stderr "not a workspace"
run "$sandbox" create "$WORK/missing.jsonl" --dir "$WORK/ws"
expect_code 66; expect_stderr "$WORK/missing.jsonl"
run "$sandbox" pack "$WORK/missing" -o "$WORK/x.tar.gz"
expect_code 66; expect_stderr "$WORK/missing"
run "$sandbox" unpack "$WORK/missing.tar.gz" -o "$WORK/out"
expect_code 66; expect_stderr "$WORK/missing.tar.gz"

# create: one workspace per good record, bad ones reported by line, exit 1.
{ sed -n 1,2p "$examples"
  echo '{"kind":"task","id":"bad","program":{"inputs":[{"name":"x","dtype":"float32","shape":[4,8]}],"nodes":[{"op":"aten::relu","args":["%y"],"out":["z"]}],"outputs":["z"]}}'
  echo '{"kind":"task", broken'
} >"$WORK/mixed.jsonl"
run "$sandbox" create - --dir "$WORK/ws" <"$WORK/mixed.jsonl"
expect_code 1
expect_stderr "ca-sandbox: error: <stdin>:3: program.nodes[0].args[0]: dangling reference '%y'"
expect_stderr "<stdin>:4: invalid JSON"
[ "$(stdout_lines)" -eq 2 ] || fail "expected 2 workspaces, got $(stdout_lines)"
[ -f "$WORK/ws/example_linear_leaky_relu/SKILL.md" ] || fail "no SKILL.md"
[ ! -e "$WORK/ws/bad" ] || fail "a workspace for the bad record"
# An existing workspace is never overwritten; --id picks one task.
run "$sandbox" create "$examples" --dir "$WORK/ws" --id example/linear_leaky_relu
expect_code 1; expect_stderr "already exists"
run "$sandbox" create "$examples" --dir "$WORK/ws2" --id example/linear_leaky_relu --backend cpu
expect_code 0; [ "$(stdout_lines)" -eq 1 ] || fail "--id made $(stdout_lines) workspaces"
grep -q '`.cpp` files' "$WORK/ws2/example_linear_leaky_relu/SKILL.md" || fail "SKILL.md not written for cpu"
run "$sandbox" create "$examples" --dir "$WORK/ws2" --id no/such/task
expect_code 65; expect_stderr "no task with id 'no/such/task'"

# exec passes the command's output and exit status through.
run "$sandbox" exec "$WORK/ws2/example_linear_leaky_relu" -- bash -c 'echo out; echo err >&2; exit 3'
expect_code 3; expect_stdout out; expect_stderr err

# pack and unpack round-trip; a bad archive is data error 65.
echo "// k" >"$WORK/ws2/example_linear_leaky_relu/kernels/k.cu"
run "$sandbox" pack "$WORK/ws2/example_linear_leaky_relu" -o "$WORK/snap.tar.gz"
expect_code 0
run "$sandbox" unpack "$WORK/snap.tar.gz" -o "$WORK/restored"
expect_code 0
diff -r "$WORK/ws2/example_linear_leaky_relu" "$WORK/restored" >/dev/null || fail "unpacked tree differs"
run "$sandbox" unpack "$WORK/snap.tar.gz" -o "$WORK/restored"
expect_code 65; expect_stderr "not empty"
echo "not an archive" >"$WORK/junk.tar.gz"
run "$sandbox" unpack "$WORK/junk.tar.gz" -o "$WORK/junk"
expect_code 65; expect_stderr "$WORK/junk.tar.gz"
finish
