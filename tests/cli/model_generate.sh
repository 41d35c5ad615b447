# The C++ generator: greedy tokens and logprobs equal transformers' generate() on a left-padded batch (tiny
# Qwen2 and SmolLM2-135M-Instruct); seeds, top-k, stop tokens and logprobs against one forward pass on a tiny
# Llama (GeneratorTest, which needs a checkpoint).
source "$(dirname "$0")/lib.bash"
source "$CA_SOURCE_DIR/tests/model/setup.bash"
ref="$CA_SOURCE_DIR/tests/model"
for arch in llama qwen2; do
  run "$PY" "$ref/model_reference.py" tiny "$WORK/models/$arch" --arch "$arch" --tokenizer "$SMOLLM2"
  expect_code 0
done
mkdir -p "$WORK/cases/qwen2" "$WORK/cases/smollm2"
ln -s "$WORK/models/qwen2" "$WORK/cases/qwen2/model"
ln -s "$SMOLLM2" "$WORK/cases/smollm2/model"
for c in "$WORK"/cases/*; do
  run "$PY" "$ref/generate_reference.py" expect "$c/model" "$c" --max-tokens 24
  expect_code 0
done
run env CA_MODEL_GENERATE_CASES="$WORK/cases" CA_MODEL_TINY="$WORK/models/llama" "$CA_BIN/ca_model_tests" \
  --gtest_filter='GenerateReferenceTest.*:GeneratorTest.*:LocalPolicyTest.*'
expect_code 0
grep -q "SKIPPED" "$WORK/stdout" && fail "a test was skipped"
grep "greedy tokens" "$WORK/stdout"
finish
