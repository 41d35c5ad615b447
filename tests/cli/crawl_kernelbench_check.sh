# scripts/kernelbench_check.sh decides every verdict through the digest path, with batches in parallel: exact
# problems on digests alone; one whose import is equal within rounding ("close") and one whose import differs
# ("differs", exit 1) are found inexact by their digests and decided by their dumped values, run again alone; one
# that runs out of memory the first time (as beside other batches on a GPU) runs again alone and is exact.
. "$(dirname "$0")/lib.bash"
bench=$WORK/bench
mkdir -p "$bench/level1" "$bench/level2"
cp "$CA_SOURCE_DIR"/examples/kernelbench/level1/*.py "$bench/level1/"
cp "$CA_SOURCE_DIR/examples/kernelbench/level1/1_Conv2d_ReLU.py" "$bench/level2/"
# fixture NAME EXPORTED: a problem whose forward returns EXPORTED under torch.export and x itself in eager.
fixture() {
  printf 'import os\nimport torch\n\n\nclass Model(torch.nn.Module):\n    def forward(self, x):\n%s\n%s\n\n\n%s\n\n\n%s\n' \
    "        $2" "        return x.clone()" "def get_inputs():
    return [torch.randn(64, 33)]" "def get_init_inputs():
    return []" >"$bench/level1/$1.py"
}
fixture 7_Close 'if torch.compiler.is_exporting(): return x * 3 / 3'
fixture 8_Differs 'if torch.compiler.is_exporting(): return x + 1'
fixture 9_Out_of_memory_once 'marker = os.path.realpath(__file__) + ".ran"
        if not torch.compiler.is_exporting() and not os.path.exists(marker):
            open(marker, "w").close()
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 1 GiB (a test)")'

run env CA_BIN="$CA_BIN" CA_PYTHON="$(torch_python)" KB_BENCHMARKS="$bench" KB_BATCH=3 KB_PARALLEL=2 \
  bash "$CA_SOURCE_DIR/scripts/kernelbench_check.sh" "$WORK/out" 4
expect_code 1
expect_stdout "checked 6 problems in"
expect_stdout "2 batches in"
expect_stdout "then 3 alone"
expect_stdout "level 1: imported 5 of 5, equal 4 (3 exact)"
expect_stdout "level 2: imported 1 of 1, equal 1 (1 exact)"
expect_stdout "not imported or not equal: kernelbench-level1-8_Differs"
check=$WORK/out/check.txt
verdicts() { awk -v id="kernelbench-$1" '$2 == id { printf "%s ", $1 }' "$check"; }
[ "$(verdicts level1-1_Conv2d_ReLU)" = "exact " ] || fail "1_Conv2d_ReLU: $(verdicts level1-1_Conv2d_ReLU)"
[ "$(verdicts level2-1_Conv2d_ReLU)" = "exact " ] || fail "level 2: $(verdicts level2-1_Conv2d_ReLU)"
[ "$(verdicts level1-7_Close)" = "inexact close " ] || fail "7_Close: $(verdicts level1-7_Close)"
[ "$(verdicts level1-8_Differs)" = "inexact differs " ] || fail "8_Differs: $(verdicts level1-8_Differs)"
[ "$(verdicts level1-9_Out_of_memory_once)" = "error exact " ] || fail "9_Out_of_memory_once: $(verdicts level1-9_Out_of_memory_once)"
grep -qF "differs  kernelbench-level1-8_Differs output 0: max |cpp - eager| = 1 (" "$check" || fail "no differs detail"
[ "$(wc -l <"$WORK/out/tasks.jsonl")" -eq 6 ] || fail "tasks.jsonl: one record per problem expected"
[ "$(grep -c '(3 problems, digests)' "$WORK/out/import.log")" -eq 2 ] || fail "import.log: $(cat "$WORK/out/import.log")"
grep -qF '(1 problems, both)' "$WORK/out/import.log" || fail "no batch of digests and dump"
# Nothing was dumped but for the two problems whose digests differed.
[ "$(find "$WORK/out/work" -name '*.safetensors' -path '*/dump/*' | wc -l)" -eq 2 ] || fail "dumps: $(find "$WORK/out/work" -path '*/dump/*')"
finish
