# The C++ chat template interpreter renders SmolLM2's and Qwen2.5-Coder's own templates (read from their GGUF
# files) exactly as transformers' apply_chat_template does, on conversations with system prompts, tool calls
# (dict and string arguments), consecutive tool results and unicode, with and without tools and the generation
# prompt; where transformers fails (SmolLM2's template on a tool call without content), so does it.
source "$(dirname "$0")/lib.bash"
source "$CA_SOURCE_DIR/tests/model/setup.bash"
if ! bash "$CA_SOURCE_DIR/scripts/setup-models.sh" qwen-template >"$WORK/setup-qwen.log" 2>&1; then
  echo "skipped: scripts/setup-models.sh qwen-template failed: $(tail -1 "$WORK/setup-qwen.log")"
  exit 77
fi
run "$PY" "$CA_SOURCE_DIR/tests/model/chat_template_reference.py" "$SMOLLM2" "$WORK/cases" \
  "smollm2=$SMOLLM2/chat_template.jinja" "qwen2.5=$models/Qwen2.5-Coder-1.5B-Instruct.chat_template.jinja"
expect_code 0
run env CA_MODEL_TEMPLATE_CASES="$WORK/cases" "$CA_BIN/ca_model_tests" --gtest_filter='ChatTemplateReferenceTest.*'
expect_code 0
grep -q "SKIPPED" "$WORK/stdout" && fail "the comparison was skipped"
grep "cases" "$WORK/stdout"
finish
