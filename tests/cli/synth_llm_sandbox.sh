# ca-synth --llm runs the model's code (the importer loads it) only in the sandbox: an answer that writes files
# outside its scratch folder (the test's folder on the host, the project) creates nothing there and still imports;
# an answer that loops forever is killed at --import-timeout and counted as a timeout.
. "$(dirname "$0")/lib.bash"
python=$(torch_python)
escape=$WORK/escaped
cat >"$WORK/writer.md" <<PY
\`\`\`python
import torch
import torch.nn as nn

for path in ["$escape", "$CA_SOURCE_DIR/escaped-from-synth", "$CA_BIN/escaped-from-synth"]:
    try:
        with open(path, "w") as f:
            f.write("written by the model")
    except OSError:
        pass


class Model(nn.Module):
    def forward(self, x):
        return torch.tanh(x) * x


def get_inputs():
    return [torch.randn(8, 32)]


def get_init_inputs():
    return []
\`\`\`
PY
printf '```python\nwhile True:\n    pass\n```\n' >"$WORK/loop.md"
serve_fake_llm fake_llm_replies.py "$WORK/loop.md" "$WORK/writer.md"
trap 'kill "$server" 2>/dev/null; rm -f "$CA_SOURCE_DIR/escaped-from-synth" "$CA_BIN/escaped-from-synth"; rm -rf "$WORK"' EXIT
echo '{"kind":"op","name":"aten::tanh","overload":"","schema":"aten::tanh(Tensor self) -> Tensor","category":"activation","usable":true}' >"$WORK/ops.jsonl"

run env CA_PYTHON="$python" "$CA_BIN/ca-synth" --llm "$url" --model fake -n 1 -v --import-timeout 30 \
  --params-dir "$WORK/params" "$WORK/ops.jsonl"
# Request 1 loops and is killed at its limit (30 s: time for an honest import on a busy machine): the CPU-time and the
# wall-clock limits are both 30 s, and a busy loop meets either first depending on the machine's load. Request 2,
# the writer, imports.
expect_code 0
expect_stderr "request 1: timeout: the model's import ran past its"
expect_stderr "limit (30 s)"
expect_stderr "1 tasks from 2 requests (2 answers); failed: timeout 1"
for path in "$escape" "$CA_SOURCE_DIR/escaped-from-synth" "$CA_BIN/escaped-from-synth"; do
  [ ! -e "$path" ] || fail "the model's code wrote $path on the host"
done
[ "$(stdout_lines)" -eq 1 ] || fail "expected the writer's one task, got $(stdout_lines) lines"
# Its scratch folder is gone; only the weights of the task kept remain (none for the tanh model: it has no params).
[ -z "$(ls -A "$WORK/params" 2>/dev/null | grep scratch)" ] || fail "a scratch folder was left: $(ls -A "$WORK/params")"

# Flags: the import timeout is a number of seconds.
run "$CA_BIN/ca-synth" --import-timeout 0 "$WORK/ops.jsonl"
expect_code 64; expect_stderr "--import-timeout: 0 is not in (0, 1e6]"
finish
