# ca-crawl ops: one record per dispatcher operator, classified.
. "$(dirname "$0")/lib.bash"
crawl=$CA_BIN/ca-crawl
py=$(torch_python)

run "$crawl" ops
expect_code 0; expect_stderr_empty
[ "$(stdout_lines)" -gt 2000 ] || fail "only $(stdout_lines) ops"
cp "$WORK/stdout" "$WORK/ops.jsonl"
$py - "$WORK/ops.jsonl" <<'PY' || fail "op records are wrong"
import json, sys
ops = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    assert r["kind"] == "op" and set(r) >= {"name", "overload", "schema", "category", "tags", "deterministic", "usable"}, r
    ops[(r["name"], r["overload"])] = r
def check(name, overload, category, usable, tag=None):
    r = ops[(name, overload)]
    assert r["category"] == category and r["usable"] == usable, r
    assert tag is None or tag in r["tags"], r
check("aten::linear", "", "matmul", True)
check("aten::conv2d", "", "convolution", True)
check("aten::gelu", "", "activation", True)
check("aten::layer_norm", "", "normalization", True)
check("aten::softmax", "int", "softmax", True)
check("aten::sum", "dim_IntList", "reduction", True)
check("aten::max_pool2d", "", "pooling", True)
check("aten::mse_loss", "", "loss", True)
check("aten::scaled_dot_product_attention", "", "attention", True)
check("aten::add", "Tensor", "elementwise", True)
check("aten::relu_", "", "activation", False, "inplace")
check("aten::add", "out", "elementwise", False, "out-variant")
check("aten::dropout", "", "random", False, "random")
check("aten::convolution_backward", "", "convolution", False, "backward")
assert not ops[("aten::zeros", "")]["usable"]
# MKL's CPU DFT can corrupt the heap of the tool running the reference: no FFT in tasks.
for (name, overload), r in ops.items():
    if r["category"] == "fft" or name in ("aten::stft", "aten::istft"):
        assert not r["usable"], r
assert "MKL" in ops[("aten::fft_ihfftn", "")]["why_unusable"]
PY

run "$crawl" ops --usable
expect_code 0
usable=$(stdout_lines)
[ "$usable" -gt 300 ] && [ "$usable" -lt 2000 ] || fail "implausible usable count $usable"
grep -q '"usable":false' "$WORK/stdout" && fail "--usable printed an unusable op"

run "$crawl" ops --summary
expect_code 0; expect_stdout "category"; expect_stdout "total"
finish
