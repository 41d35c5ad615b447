#!/usr/bin/env bash
# ca-rollout --policy builtin on the cpu backend over real KernelBench problems that exercise its heavier patterns
# (a matmul with no epilogue, a 2-d convolution, 1-d and 3-d transposed convolutions, 3-d max and 1-d average pooling,
# cumsum, Gemm + eval batch norm, Conv3d + pooling chain), imported at --scale 16 from ../shared/benchmarks/kernelbench
# beside the checkout: every one is covered and its kernel passes the harness's judgement. Skipped when the problems
# are absent.
. "$(dirname "$0")/lib.bash"
benchmarks=${KB_BENCHMARKS:-$CA_SOURCE_DIR/../shared/benchmarks/kernelbench}
[ -d "$benchmarks/level1" ] || { echo "skipped: no $benchmarks"; exit 77; }  # ctest: SKIP_RETURN_CODE
mkdir -p "$WORK/level1" "$WORK/level2"
for f in 1_Square_matrix_multiplication_ 43_Max_Pooling_3D 44_Average_Pooling_1D \
  50_conv_standard_2D__square_input__square_kernel 58_conv_transposed_3D__asymmetric_input__asymmetric_kernel \
  64_conv_transposed_1D 89_cumsum; do
  cp "$benchmarks/level1/$f.py" "$WORK/level1/" || fail "missing level1/$f.py"
done
for f in 33_Gemm_Scale_BatchNorm 8_Conv3d_Divide_Max_GlobalAvgPool_BiasAdd_Sum; do
  cp "$benchmarks/level2/$f.py" "$WORK/level2/" || fail "missing level2/$f.py"
done
cd "$WORK" || exit 1
run env CA_PYTHON="$(torch_python)" "$CA_BIN/ca-crawl" kernelbench level1 level2 --scale 16 -o tasks.jsonl
expect_code 0
chmod -R a+rX "$WORK"  # the weights: the sandbox's user reads them
run "$CA_BIN/ca-rollout" --policy builtin --builtin-variants 1 --no-compile --no-final-profile -j 2 --seed 5 \
  tasks.jsonl -o out.jsonl
expect_code 0
python3 - out.jsonl <<'PY' || fail "trajectories"
import json, sys
records = [json.loads(line) for line in open(sys.argv[1])]
assert len(records) == 9, len(records)
for r in records:
    extra = r["turns"][-1].get("extra", {})
    assert "uncovered" not in extra, (r["task_id"], extra["uncovered"])
    assert r["verify"]["ok"] is True, (r["task_id"], r["verify"]["message"])
patterns = {p for r in records for t in r["turns"] for p in t.get("extra", {}).get("patterns", [])}
assert {"matmul", "convolution", "pooling", "scan", "norm"} <= patterns, patterns
PY
finish
