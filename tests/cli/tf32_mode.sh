# The baselines' TF32 mode, one flag (--tf32 none|pytorch|all, default pytorch: PyTorch's own defaults) declared once
# for ca-filter, ca-profile and ca-eval: a bad name is a usage error naming the set, and the mode reaches every
# baseline: the records name it as LibTorch read it back where eager was timed, the bridge sets and reports it, and
# bench/eager_torch.py takes the same modes. (On the cpu TF32 changes no result; the cuda effect is tests/gpu's.)
. "$(dirname "$0")/lib.bash"
py=$(torch_python)

for tool in ca-filter ca-profile; do
  run "$CA_BIN/$tool" --tf32 pytorh /dev/null
  expect_code 64
  expect_stderr "--tf32: 'pytorh' is not one of 'none', 'pytorch', 'all', did you mean 'pytorch'?"
  run "$CA_BIN/$tool" --tf32 fp32 /dev/null
  expect_code 64
  run "$CA_BIN/$tool" --help
  expect_code 0
  grep -qF -- "--tf32 MODE=pytorch" "$WORK/stdout" || fail "$tool --help: --tf32 MODE with its default pytorch"
done
run "$CA_BIN/ca-eval" run --tf32 al --suite /dev/null --judged /dev/null
expect_code 64
expect_stderr "did you mean 'all'?"

# ca-filter: meta.precision of a kept task, per mode (no compile: the cpu's compile is minutes).
head -1 "$CA_SOURCE_DIR/examples/filter/tasks.jsonl" >"$WORK/task.jsonl"
for mode in default none pytorch all; do
  flags=(--min-ms 0 --no-compile)
  [ "$mode" = default ] || flags+=(--tf32 "$mode")
  run "$CA_BIN/ca-filter" "${flags[@]}" "$WORK/task.jsonl"
  expect_code 0
  want=${mode/default/pytorch}
  "$py" -c 'import json,sys; r=json.loads(open(sys.argv[1]).readline()); assert r["meta"]["precision"]==sys.argv[2], r["meta"]' \
    "$WORK/stdout" "$want" || fail "ca-filter --tf32 $mode: meta.precision is not $want"
done

# ca-profile: the profile's precision, per mode.
dir=$CA_SOURCE_DIR/examples/candidates/cpu
head -1 "$dir/candidates.jsonl" >"$WORK/candidate.jsonl"
for mode in default none all; do
  flags=(--tasks "$dir/tasks.jsonl" --no-compile --rounds 1 --min-ms 0 --threads 1 --timeout 20)
  [ "$mode" = default ] || flags+=(--tf32 "$mode")
  run "$CA_BIN/ca-profile" "${flags[@]}" "$WORK/candidate.jsonl"
  expect_code 0
  want=${mode/default/pytorch}
  "$py" -c 'import json,sys; p=json.loads(open(sys.argv[1]).readline())["profile"]; assert p["ok"] and p["precision"]==sys.argv[2], p' \
    "$WORK/stdout" "$want" || fail "ca-profile --tf32 $mode: precision is not $want"
done

# The bridge sets torch.backends' flags per mode and reports them read back (compiled.cpp refuses a package whose
# report disagrees with its key's mode; torch_units CompiledTest checks a real compile's report).
"$py" - "$CA_SOURCE_DIR/bridge" <<'PY' || fail "the bridge's --tf32 modes"
import sys
sys.path.insert(0, sys.argv[1])
import compile_task
for mode, (matmul, cudnn) in {"none": (False, False), "pytorch": (False, True), "all": (True, True)}.items():
    compile_task.set_modes(mode, 0)
    assert compile_task.tf32_flags() == {"matmul": matmul, "cudnn": cudnn}, (mode, compile_task.tf32_flags())
PY

# bench/eager_torch.py: the same modes, named in its output.
for mode in none all; do
  "$py" "$CA_SOURCE_DIR/bench/eager_torch.py" "$WORK/task.jsonl" --device cpu --rounds 1 --min-ms 0 \
    --cpu-allocator none --tf32 "$mode" >"$WORK/eager.jsonl" 2>"$WORK/stderr" || fail "eager_torch.py --tf32 $mode"
  grep -q "\"tf32\": \"$mode\"" "$WORK/eager.jsonl" || fail "eager_torch.py --tf32 $mode: not in its output"
done
finish
