# The C++ transformer's logits equal transformers' (float32: max abs diff <= 1e-4 and the same argmax on every
# real position of a left-padded batch; bfloat16: argmax agreement printed) on tiny random Llama (llama3 rope
# scaling, tied), Qwen2 (biases, sharded checkpoint) and Qwen3 models and on SmolLM2-135M-Instruct; the
# checkpoints it saves load in transformers with the same logits.
source "$(dirname "$0")/lib.bash"
source "$CA_SOURCE_DIR/tests/model/setup.bash"
ref="$CA_SOURCE_DIR/tests/model/model_reference.py"
for arch in llama qwen2 qwen3; do
  shard=""
  [ "$arch" = qwen2 ] && shard=--shard
  run "$PY" "$ref" tiny "$WORK/models/$arch" --arch "$arch" --tokenizer "$SMOLLM2" $shard
  expect_code 0
  mkdir -p "$WORK/cases/$arch"
  ln -s "$WORK/models/$arch" "$WORK/cases/$arch/model"
done
[ -f "$WORK/models/qwen2/model.safetensors.index.json" ] || fail "the qwen2 checkpoint is not sharded"
mkdir -p "$WORK/cases/smollm2"
ln -s "$SMOLLM2" "$WORK/cases/smollm2/model"
for c in "$WORK"/cases/*; do
  run "$PY" "$ref" expect "$c/model" "$c"
  expect_code 0
done
run env CA_MODEL_LOGITS_CASES="$WORK/cases" "$CA_BIN/ca_model_tests" --gtest_filter='ModelReferenceTest.*'
expect_code 0
grep -q "SKIPPED" "$WORK/stdout" && fail "the comparison was skipped"
grep "max abs diff" "$WORK/stdout"
for c in "$WORK"/cases/*; do
  run "$PY" "$ref" check "$c/saved" "$c"
  expect_code 0
  cat "$WORK/stdout"
done
finish
