# ca-synth --llm asks an OpenAI-compatible endpoint (a local fake here) for a
# model.py, imports it through the KernelBench importer into a checked task
# (weights in --params-dir), and counts a reply without code and a model that
# does not load as failures by kind; --prompts sends a fixed number of prompts,
# --llm-jobs several at once.
. "$(dirname "$0")/lib.bash"
synth=$CA_BIN/ca-synth
python=$(torch_python)
serve_fake_llm fake_llm_server.py
echo '{"kind":"op","name":"aten::gelu","overload":"","schema":"aten::gelu(Tensor self, *, str approximate=\"none\") -> Tensor","category":"activation","usable":true}' >"$WORK/ops.jsonl"

# The fake answers a good model.py, then no code, then a broken model, in turn.
run env CA_PYTHON="$python" "$synth" --llm "$url" --model fake -n 1 --params-dir "$WORK/params" "$WORK/ops.jsonl"
expect_code 0; expect_stderr "1 tasks from 1 requests (1 answers); failed: none"
expect_stdout '"source":"llm"'; expect_stdout '"op":"aten::linear"'; expect_stdout '"fingerprint":"sha256:'
ls "$WORK"/params/*.safetensors >/dev/null 2>&1 || fail "no weights written to --params-dir"
cp "$WORK/stdout" "$WORK/task.jsonl"
run "$CA_BIN/ca-crawl" tasks "$WORK/task.jsonl"
expect_code 0

run env CA_PYTHON="$python" "$synth" --llm "$url" --model fake -n 1 -v --params-dir "$WORK/params" "$WORK/ops.jsonl"
expect_code 0; expect_stderr "1 tasks from 3 requests (3 answers); failed: load 1, no code 1"
expect_stderr "request 1: no code: no code block in the reply"
expect_stderr "request 2: load: Unsupported: the file defines no get_inputs"

# Three prompts, two in flight: the fake's three replies in some order, each counted once; exit 0 however few tasks.
run env CA_PYTHON="$python" "$synth" --llm "$url" --model fake --prompts 3 --llm-jobs 2 --params-dir "$WORK/params" \
  "$WORK/ops.jsonl"
expect_code 0; expect_stderr "1 tasks from 3 requests (3 answers); failed: load 1, no code 1"
[ "$(stdout_lines)" -eq 1 ] || fail "expected 1 task, got $(stdout_lines)"

run "$synth" --prompts 3 "$WORK/ops.jsonl"
expect_code 64; expect_stderr "--prompts, --llm-jobs and --max-tokens need --llm"
run "$synth" --llm "$url" --model fake --prompts 3 -n 2 "$WORK/ops.jsonl"
expect_code 64; expect_stderr "--prompts and -n exclude each other"
finish
