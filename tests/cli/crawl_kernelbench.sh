# ca-crawl kernelbench imports KernelBench problem files through the Python
# bridge, checks every task, writes weights beside the records, reports a
# problem it cannot import as an import_error record and goes on, and its dump
# and its digests match the original problems run in eager PyTorch
# (bridge/check_import.py); the digests are of the bytes the dump holds, and
# the check draws the dumped inputs itself (build/lib/libca_tensors.so).
. "$(dirname "$0")/lib.bash"
crawl=$CA_BIN/ca-crawl
python=$(torch_python)
export CA_PYTHON=$python
problems=$CA_SOURCE_DIR/examples/kernelbench/level1

export CA_TENSORS_LIB=$CA_BIN/../lib/libca_tensors.so
run "$crawl" kernelbench "$problems" --scale 4 -o "$WORK/out/tasks.jsonl" --dump "$WORK/dump" --digests "$WORK/digests.jsonl"
expect_code 0
expect_stderr "imported 2 of 2 (level 1: 2/2)"
[ "$(grep -c '"kind":"task"' "$WORK/out/tasks.jsonl")" -eq 2 ] || fail "expected 2 task records"
grep -qF '"id":"kernelbench-level1-1_Conv2d_ReLU","source":"kernelbench","level":1' "$WORK/out/tasks.jsonl" || fail "identity fields"
# Scaled: batch 8 and 3 channels stay (below 16), 128 -> 32; the weights are read from the file beside the records.
grep -qF '"shape":[8,3,32,32],"init":"randn"' "$WORK/out/tasks.jsonl" || fail "input not scaled or not randn"
grep -qF "\"init\":{\"file\":{\"path\":\"$WORK/out/kernelbench-level1-1_Conv2d_ReLU.safetensors\",\"key\":\"conv.weight\"}}" \
  "$WORK/out/tasks.jsonl" || fail "params not read from the file beside the records"
grep -qF '"derived_inputs":{"a":"div(add(rand, T(rand)))"}' "$WORK/out/tasks.jsonl" || fail "derived input not named"
grep -qF '"output_shapes":[{"shape":[64],"dtype":"float32"},{"shape":[64],"dtype":"int64"}]' "$WORK/out/tasks.jsonl" ||
  fail "meta not filled in"
"$python" "$CA_SOURCE_DIR/bridge/check_import.py" "$WORK/out/tasks.jsonl" "$WORK/dump" >"$WORK/check" 2>&1 ||
  fail "check_import: $(tail -3 "$WORK/check")"
grep -qF "level 1: imported 2 of 2, equal 2 (2 exact)" "$WORK/check" || fail "check_import did not find both equal: $(tail -2 "$WORK/check")"

# The digests: one line per task, of the very bytes the dump holds, inputs drawn alike through the library.
[ "$(wc -l <"$WORK/digests.jsonl")" -eq 2 ] || fail "expected 2 digest lines"
grep -qF '{"id":"kernelbench-level1-2_Symmetric_max","seed":0,"device":"cpu","inputs":[{"name":"a","stream":0,"digest":"' \
  "$WORK/digests.jsonl" || fail "digest line: $(tail -1 "$WORK/digests.jsonl")"
"$python" - "$WORK/out/tasks.jsonl" "$WORK/digests.jsonl" "$WORK/dump" <<'PY' || fail "digests do not describe the dump"
import json, sys
sys.path.insert(0, __import__("os").environ["CA_SOURCE_DIR"] + "/bridge")
from check_import import Tensors
from safetensors.torch import load_file
import os, torch
tensors = Tensors(os.environ["CA_TENSORS_LIB"])
records = [json.loads(line) for line in open(sys.argv[1])]
digests = {d["id"]: d for d in map(json.loads, open(sys.argv[2]))}
for record in records:
    d, dump = digests[record["id"]], load_file(f"{sys.argv[3]}/{record['id']}.safetensors")
    for spec, line in zip(record["program"]["inputs"], d["inputs"]):
        drawn = tensors.draw(spec, d["seed"], line["stream"], "cpu")
        assert torch.equal(drawn, dump[f"inputs.{spec['name']}"]), spec["name"]
        assert tensors.digest(drawn) == line["digest"], spec["name"]
    for i, line in enumerate(d["outputs"]):
        output = dump[f"outputs.{i}"]
        assert tensors.digest(output) == line["digest"] and line["shape"] == list(output.shape), i
PY
"$python" "$CA_SOURCE_DIR/bridge/check_import.py" "$WORK/out/tasks.jsonl" --digests "$WORK/digests.jsonl" >"$WORK/check" 2>&1 ||
  fail "check_import --digests: $(tail -3 "$WORK/check")"
grep -qF "level 1: imported 2 of 2, equal 2 (2 exact)" "$WORK/check" || fail "digests not equal: $(tail -2 "$WORK/check")"
# A corrupted digest: inexact on digests alone (values not compared, exit 1); with the dump, its values decide.
"$python" -c '
import json, sys
for line in open(sys.argv[1]):
    d = json.loads(line); d["outputs"][0]["digest"] = "0" * 32; print(json.dumps(d))' "$WORK/digests.jsonl" >"$WORK/corrupt.jsonl"
"$python" "$CA_SOURCE_DIR/bridge/check_import.py" "$WORK/out/tasks.jsonl" --digests "$WORK/corrupt.jsonl" >"$WORK/check" 2>&1 &&
  fail "check_import passed with corrupted digests"
grep -qF "inexact  kernelbench-level1-1_Conv2d_ReLU digest of output 0 differs; values not compared" "$WORK/check" ||
  fail "corrupted digest not reported: $(head -2 "$WORK/check")"
"$python" "$CA_SOURCE_DIR/bridge/check_import.py" "$WORK/out/tasks.jsonl" "$WORK/dump" --digests "$WORK/corrupt.jsonl" \
  >"$WORK/check" 2>&1 || fail "the dump's values did not decide: $(head -2 "$WORK/check")"

# A changed weight makes check_import fail, so the check can fail.
"$python" - "$WORK/out/kernelbench-level1-1_Conv2d_ReLU.safetensors" <<'PY'
import sys
from safetensors.torch import load_file, save_file
weights = load_file(sys.argv[1]); weights["conv.bias"] += 1; save_file(weights, sys.argv[1])
PY
"$python" "$CA_SOURCE_DIR/bridge/check_import.py" "$WORK/out/tasks.jsonl" "$WORK/dump" >"$WORK/check" 2>&1 &&
  fail "check_import passed with a changed weight"
grep -q "^differs  kernelbench-level1-1_Conv2d_ReLU" "$WORK/check" || fail "changed weight not reported: $(head -2 "$WORK/check")"
"$python" "$CA_SOURCE_DIR/bridge/check_import.py" "$WORK/out/tasks.jsonl" --digests "$WORK/digests.jsonl" >"$WORK/check" 2>&1 &&
  fail "check_import --digests passed with a changed weight"
grep -q "^inexact  kernelbench-level1-1_Conv2d_ReLU" "$WORK/check" || fail "changed weight not seen: $(head -2 "$WORK/check")"
"$python" "$CA_SOURCE_DIR/bridge/check_import.py" "$WORK/out/tasks.jsonl" "$WORK/dump" --digests "$WORK/digests.jsonl" \
  >"$WORK/check" 2>&1 && fail "check_import --digests with the dump passed with a changed weight"
grep -q "^differs  kernelbench-level1-1_Conv2d_ReLU" "$WORK/check" || fail "changed weight not differs: $(head -2 "$WORK/check")"

# A broken problem among good ones: an import_error record saying why, the others go through, exit 1.
mkdir -p "$WORK/level1"
cp "$problems"/*.py "$WORK/level1/"
printf 'import torch\nclass Model(torch.nn.Module):\n    pass\n' >"$WORK/level1/3_No_inputs.py"
run "$crawl" kernelbench "$WORK/level1" --scale 4 --params-dir "$WORK/params"
expect_code 1
expect_stderr "ca-crawl: error: $WORK/level1/3_No_inputs.py: Unsupported: the file defines no get_inputs"
expect_stderr "imported 2 of 3 (level 1: 2/3)"
[ "$(stdout_lines)" -eq 3 ] || fail "expected 3 records, got $(stdout_lines)"
expect_stdout '{"kind":"import_error","id":"kernelbench-level1-3_No_inputs","source":"kernelbench","level":1'
expect_stdout '"stage":"load"'
[ -f "$WORK/params/kernelbench-level1-2_Symmetric_max.safetensors" ] || fail "--params-dir not used"

run "$crawl" kernelbench "$WORK/missing"
expect_code 66; expect_stderr "$WORK/missing: no such directory"
run "$crawl" kernelbench "$problems" --scale 0
expect_code 64; expect_stderr "--scale"
run "$crawl" kernelbench "$problems" --scale two
expect_code 64
run "$crawl" kernelbench "$problems" --scale 4 --params-dir "$WORK/params" --digests "$WORK/no-such-dir/digests.jsonl"
expect_code 74; expect_stderr "$WORK/no-such-dir/digests.jsonl"
run env CA_PYTHON="$WORK/no-python" "$crawl" kernelbench "$problems" -o "$WORK/none.jsonl"
expect_code 65; expect_stderr "no-python"
[ ! -e "$WORK/none.jsonl" ] || fail "output written although the bridge did not run"
finish
