# Twenty real KernelBench problems (every tenth of level 1 and 2, ../shared/
# benchmarks/kernelbench beside the checkout) import at --scale 16, and the C++
# interpreter's outputs equal the original problems run in eager PyTorch, by
# digests (scripts/kernelbench_check.sh, which runs all 200 without a glob).
# Skipped when the problems are absent.
. "$(dirname "$0")/lib.bash"
benchmarks=${KB_BENCHMARKS:-$CA_SOURCE_DIR/../shared/benchmarks/kernelbench}
[ -d "$benchmarks/level1" ] || { echo "skipped: no $benchmarks"; exit 77; }  # ctest: SKIP_RETURN_CODE
run env CA_BIN="$CA_BIN" CA_PYTHON="$(torch_python)" KB_BENCHMARKS="$benchmarks" \
  bash "$CA_SOURCE_DIR/scripts/kernelbench_check.sh" "$WORK/kb" 16 '*0_*'
expect_code 0
expect_stdout "checked 20 problems in"
expect_stdout "level 1: imported 10 of 10, equal 10"
expect_stdout "level 2: imported 10 of 10, equal 10"
finish
