# ca-model generate: completions with ids and logprobs for text and id prompts in batches, the same tokens for
# the same seed, a bad record reported as file:line and skipped (exit 1), usage errors (64), a missing model (66).
source "$(dirname "$0")/lib.bash"
tool="$CA_BIN/ca-model"
run "$tool" --help
expect_code 0
expect_stdout "generate"
run "$tool" generate --bogus
expect_code 64
run "$tool" generate -m "$WORK/none" -
expect_code 66
expect_stderr "ca-model: error:"

source "$CA_SOURCE_DIR/tests/model/setup.bash"
run "$PY" "$CA_SOURCE_DIR/tests/model/model_reference.py" tiny "$WORK/tiny" --arch qwen2 --tokenizer "$SMOLLM2"
expect_code 0
printf '%s\n' '{"id": 1, "prompt": "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"}' '{"id": 2, "ids": [1, 2, 3]}' \
  '{"id": 3, "prompt": "a longer prompt than the others, so that the batch is padded"}' >"$WORK/in.jsonl"
run "$tool" generate -m "$WORK/tiny" --max-tokens 5 --batch 2 --seed 4 "$WORK/in.jsonl"
expect_code 0
[ "$(stdout_lines)" -eq 3 ] || fail "expected 3 records, got $(stdout_lines)"
cp "$WORK/stdout" "$WORK/first.jsonl"
"$PY" - "$WORK/first.jsonl" <<'PY' || fail "completions lack ids, logprobs or the input's fields"
import json, sys
for line, want in zip(open(sys.argv[1]), (1, 2, 3)):
    r = json.loads(line)
    c = r["completion"]
    assert r["id"] == want and len(c["ids"]) == len(c["logprobs"]) and 1 <= len(c["ids"]) <= 5, r
    assert all(lp <= 0 for lp in c["logprobs"]) and c["finish_reason"] in ("stop", "length"), r
PY
expect_stderr "tokens/s"
run "$tool" generate -m "$WORK/tiny" --max-tokens 5 --batch 2 --seed 4 "$WORK/in.jsonl"
cmp -s "$WORK/stdout" "$WORK/first.jsonl" || fail "the same seed gave other tokens"
printf '%s\n' '{"id": 1, "ids": [1, 2]}' '{"id": 2}' '{"id": 3, "ids": "x"}' >"$WORK/bad.jsonl"
run "$tool" generate -m "$WORK/tiny" --max-tokens 2 "$WORK/bad.jsonl"
expect_code 1
expect_stderr "bad.jsonl:2: the record has neither"
expect_stderr "bad.jsonl:3: ids: not a non-empty array of integers"
[ "$(stdout_lines)" -eq 1 ] || fail "the good record was not written"
finish
