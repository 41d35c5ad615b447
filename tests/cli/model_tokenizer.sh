# The C++ tokenizer gives the ids and text of Hugging Face `tokenizers` on SmolLM2's tokenizer.json and on
# variants of it with Qwen2's and Llama 3's pre-tokenizers, NFC, and added tokens: the project's own code, CUDA
# sources, docs, JSON records, and hard cases (unicode, whitespace, special tokens).
source "$(dirname "$0")/lib.bash"
source "$CA_SOURCE_DIR/tests/model/setup.bash"
cd "$CA_SOURCE_DIR"
corpus=(examples/candidates/cuda/*.cu common/ir/*.cpp common/model/*.cpp kernels/include/*.h docs/*.md README.md
        examples/*.jsonl)
run "$PY" tests/model/tokenizer_reference.py "$SMOLLM2/tokenizer.json" "$WORK/cases" "${corpus[@]}"
expect_code 0
run env CA_MODEL_TOKENIZER_CASES="$WORK/cases" "$CA_BIN/ca_model_tests" --gtest_filter='TokenizerReferenceTest.*'
expect_code 0
expect_stdout "qwen2_nfc: "
grep -q "SKIPPED" "$WORK/stdout" && fail "the comparison was skipped"
grep "cases, " "$WORK/stdout"
finish
