# ca-crawl tasks checks task records, fills in meta, and reports bad ones by
# file and line while the good ones go through.
. "$(dirname "$0")/lib.bash"
crawl=$CA_BIN/ca-crawl
examples=$CA_SOURCE_DIR/examples/tasks.jsonl

run "$crawl" tasks "$examples"
expect_code 0; expect_stderr_empty
[ "$(stdout_lines)" -eq "$(wc -l <"$examples")" ] || fail "lost records"
expect_stdout '"fingerprint":"sha256:'
expect_stdout '"output_shapes":[{"shape":[256,512],"dtype":"float32"}]'

# A bad record on line 3 among good ones: the good ones pass, exit 1.
{ sed -n 1,2p "$examples"
  echo '{"kind":"task","id":"bad","program":{"inputs":[{"name":"x","dtype":"float32","shape":[4,8]}],"nodes":[{"op":"aten::relu","args":["%y"],"out":["z"]}],"outputs":["z"]}}'
  sed -n 3p "$examples"
  echo '{"kind":"task", broken'
} >"$WORK/mixed.jsonl"
run "$crawl" tasks "$WORK/mixed.jsonl"
expect_code 1
expect_stderr "ca-crawl: error: $WORK/mixed.jsonl:3: program.nodes[0].args[0]: dangling reference '%y'"
expect_stderr "$WORK/mixed.jsonl:5: invalid JSON"
[ "$(stdout_lines)" -eq 3 ] || fail "expected the 3 good records, got $(stdout_lines)"

# stdin is named <stdin>; --fail-fast stops with 65 and writes no output file.
run "$crawl" tasks --fail-fast -o "$WORK/out.jsonl" - <"$WORK/mixed.jsonl"
expect_code 65; expect_stderr "<stdin>:3:"
[ ! -e "$WORK/out.jsonl" ] || fail "output file written despite failure"

run "$crawl" tasks - </dev/null
expect_code 0; [ "$(stdout_lines)" -eq 0 ] || fail "empty input gave output"

run "$crawl" tasks "$WORK/missing.jsonl"
expect_code 66; expect_stderr "$WORK/missing.jsonl"
finish
