#!/usr/bin/env bash
# One PPO step of ca-train against the same step written over transformers (bench/ppo_step.sh, on a tiny random
# Llama whose padding token is <|im_end|>, as SmolLM2's is): the actor's gradient norm before clipping agrees within
# 1e-3. It found that ca-train trained the padding token's embedding, which transformers does not.
source "$(dirname "$0")/lib.bash"
source "$CA_SOURCE_DIR/tests/model/setup.bash"
run env SHAPES=2x64 WARMUP=0 STEPS=1 THREADS=2 CA_BIN="$CA_BIN" CA_PYTHON="$PY" SMOLLM2="$SMOLLM2" \
  bash "$CA_SOURCE_DIR/bench/ppo_step.sh" cpu
cat "$WORK/stdout" "$WORK/stderr"
expect_code 0
grep -q "^cpu    float32       2     64 " "$WORK/stdout" || fail "no row for the step"
finish
