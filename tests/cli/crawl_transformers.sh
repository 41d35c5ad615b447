# ca-crawl modules over transformers' models/ tree (the venv's pinned transformers): the attention, MLP, norm and
# embedding blocks of the model families, each with its role, __init__ source and the config fields it reads.
. "$(dirname "$0")/lib.bash"
models=$("$(torch_python)" -c 'import os, transformers; print(os.path.join(os.path.dirname(transformers.__file__), "models"))' 2>/dev/null) ||
  { echo "skipped: no transformers in the venv (make venv installs it)"; exit 77; }  # ctest: SKIP_RETURN_CODE

run "$CA_BIN/ca-crawl" modules "$models" --origin transformers
expect_code 0; expect_stderr_empty
"$(torch_python)" - "$WORK/stdout" <<'PY' || fail "module records are wrong"
import collections, json, sys
records = {}
roles = collections.Counter()
for line in open(sys.argv[1]):
    r = json.loads(line)
    records[r["name"]] = r
    roles[r["role"]] += 1
for role in ("attention", "mlp", "norm", "embedding", "rotary_embedding"):
    assert roles[role] >= 50, (role, roles)
attn = records["LlamaAttention"]
assert attn["role"] == "attention" and attn["origin"] == "transformers", attn["role"]
assert {"hidden_size", "num_attention_heads", "num_key_value_heads"} <= set(attn["config_fields"]), attn["config_fields"]
assert attn["init_source"].startswith("def __init__(self, config"), attn["init_source"][:80]
assert "def forward" in attn["forward_source"]
assert records["Qwen2MLP"]["role"] == "mlp" and "intermediate_size" in records["Qwen2MLP"]["config_fields"]
assert records["LlamaRMSNorm"]["role"] == "norm" and records["LlamaRMSNorm"]["init_signature"].startswith("(self, hidden_size")
PY
finish
