# A record whose judging throws (here LibTorch's CPU allocator, asked for 1 PiB: a c10::Error, as a CUDA
# out-of-memory is a c10::OutOfMemoryError) fails alone: `ca-filter: error: FILE:LINE: <the error's first line>`, the
# records before and after it judged, exit 1, and no temporary file left beside the outputs. (The unit tests
# util/record_loop_test.cpp and verify/candidates_test.cpp throw c10::OutOfMemoryError itself through the loops.)
. "$(dirname "$0")/lib.bash"
export CA_LOCK_DIR=$WORK
mkdir "$WORK/out"
huge='{"kind":"task","id":"errors/huge","seed":1,"program":{"inputs":[{"name":"x","dtype":"float32","shape":[281474976710656],"init":"rand"}],"params":[],"nodes":[{"op":"aten::gelu","args":["%x"],"out":["y"]}],"outputs":["y"]}}'
good='{"kind":"task","id":"errors/after","seed":1,"program":{"inputs":[{"name":"x","dtype":"float32","shape":[64,64],"init":"rand"}],"params":[],"nodes":[{"op":"aten::mm","args":["%x","%x"],"out":["y"]},{"op":"aten::tanh","args":["%y"],"out":["z"]}],"outputs":["z"]}}'
{ head -1 "$CA_SOURCE_DIR/examples/filter/tasks.jsonl"; echo "$huge"; echo "$good"; } >"$WORK/tasks.jsonl"

run "$CA_BIN/ca-filter" --min-ms 0 -o "$WORK/out/kept.jsonl" --rejects "$WORK/out/rejects.jsonl" "$WORK/tasks.jsonl"
expect_code 1
expect_stderr "ca-filter: error: $WORK/tasks.jsonl:2: "
expect_stderr "can't allocate memory"
grep -q "Exception raised from\|frame #" "$WORK/stderr" && fail "a C++ backtrace on stderr"
expect_stderr "of 2; rejected:"
expect_stderr "not judged: 1"
grep -q '"id":"filter/linear_gelu"' "$WORK/out/kept.jsonl" || fail "the record before was not kept"
grep -qh '"id":"errors/after"' "$WORK/out/kept.jsonl" "$WORK/out/rejects.jsonl" || fail "the record after was not judged"
left=$(find "$WORK/out" -name '*.tmp-*')
[ -z "$left" ] || fail "temporary files left: $left"

# --fail-fast: the run ends there, exit 65, with no output file and no temporary.
run "$CA_BIN/ca-filter" --min-ms 0 --fail-fast -o "$WORK/out/stopped.jsonl" --rejects "$WORK/out/stopped_rejects.jsonl" "$WORK/tasks.jsonl"
expect_code 65
expect_stderr "ca-filter: error: $WORK/tasks.jsonl:2: "
[ ! -e "$WORK/out/stopped.jsonl" ] || fail "a stopped run left its output"
left=$(find "$WORK/out" -name '*.tmp-*')
[ -z "$left" ] || fail "temporary files left: $left"
finish
