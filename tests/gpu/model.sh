#!/usr/bin/env bash
# The policy model on the GPU: logits of the C++ transformer on cuda (fp32 and bf16) against transformers' on the
# CPU and against transformers' on cuda, on tiny random Llama/Qwen2/Qwen3 models and on SmolLM2-135M-Instruct, then generation tokens/s against
# transformers' generate() on cuda (bench/model_generate.sh cuda). SMOLLM2 names the converted checkpoint (made on
# the machine from the GGUF, which travels in two parts: tests/gpu/README in RESULTS, session 10).
# Usage: model.sh OUT_DIR. CA_BIN defaults to build-gpu/bin; CA_PYTHON to python3 (torch + transformers).
set -uo pipefail
out=${1:?usage: model.sh OUT_DIR}
src=$(cd "$(dirname "$0")/../.." && pwd)
bin=${CA_BIN:-$src/build-gpu/bin}
py=${CA_PYTHON:-python3}
smol=${SMOLLM2:?SMOLLM2: the converted SmolLM2 checkpoint}
ref=$src/tests/model/model_reference.py
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for arch in llama qwen2 qwen3; do
  "$py" "$ref" tiny "$work/models/$arch" --arch "$arch" --tokenizer "$smol" || exit 1
  mkdir -p "$work/cases/$arch" && ln -s "$work/models/$arch" "$work/cases/$arch/model"
done
mkdir -p "$work/cases/smollm2" && ln -s "$smol" "$work/cases/smollm2/model"
cp -r "$work/cases" "$work/cases-cuda"
for c in "$work"/cases/*; do CUDA_VISIBLE_DEVICES= "$py" "$ref" expect "$c/model" "$c" || exit 1; done
for c in "$work"/cases-cuda/*; do "$py" "$ref" expect "$c/model" "$c" --device cuda || exit 1; done
status=0
for reference in cases cases-cuda; do
  echo "== against transformers' logits computed in $reference" | tee -a "$out/logits.txt"
  CA_TEST_DEVICE=cuda CA_MODEL_LOGITS_CASES="$work/$reference" "$bin/ca_model_tests" \
    --gtest_filter='ModelReferenceTest.*' | tee -a "$out/logits.txt"
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
done
for batch in 1 8 32; do
  BATCH=$batch MAX_TOKENS=64 CA_BIN=$bin CA_PYTHON=$py bash "$src/bench/model_generate.sh" cuda "$smol" |
    tee -a "$out/generate.txt"
done
exit "$status"
