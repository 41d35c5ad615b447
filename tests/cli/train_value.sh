# ca-train value on a tiny random Llama (SmolLM2's tokenizer): the critic (backbone + value head score.weight on
# the final hidden states) starts from the policy with a zero head (explained variance 0) and after 30 updates on
# the Monte-Carlo returns of 12 toy trajectories (rewards 0 to 2) explains part of their variance (EV > 0, a
# small part so far: about 3e-4 in 30 updates);
# the checkpoint loads in transformers as a token-classification model whose values equal ours.
source "$(dirname "$0")/lib.bash"
source "$CA_SOURCE_DIR/tests/model/setup.bash"
run "$PY" "$CA_SOURCE_DIR/tests/model/model_reference.py" tiny "$WORK/tiny" --arch llama --tokenizer "$SMOLLM2"
expect_code 0
python3 "$CA_SOURCE_DIR/tests/train/make_trajectories.py" "$WORK/toy.jsonl"
args=(--model "$WORK/tiny" --data "$WORK/toy.jsonl" --batch 4 --micro-batch 2 --lr 3e-3 --warmup 2 --seed 3 -j 2)
run "$CA_BIN/ca-train" value "${args[@]}" --out "$WORK/v" --steps 30 --checkpoint-every 15
expect_code 0
cat "$WORK/stderr"
expect_stderr "kept 12 of 12 trajectories"
python3 - "$WORK/stderr" "$WORK/v/log.jsonl" <<'PY' || fail "explained variance did not become positive"
import json, re, sys
m = re.search(r"explained variance over the data (\S+) -> (\S+);", open(sys.argv[1]).read())
before, after = float(m.group(1)), float(m.group(2))
log = [json.loads(l) for l in open(sys.argv[2])]
assert [r["step"] for r in log] == list(range(1, 31))
print(f"EV over the data {before:.4f} -> {after:.4f}; value loss {log[0]['value_loss']:.4f} -> "
      f"{log[-1]['value_loss']:.4f}; batch EV at the last step {log[-1]['explained_variance']:.4f}")
sys.exit(0 if abs(before) < 1e-9 and after > 0 and log[-1]["value_loss"] < log[0]["value_loss"] else 1)
PY
ckpt="$WORK/v/checkpoint-000030"
[ -f "$ckpt/optimizer.safetensors" ] && [ -d "$WORK/v/checkpoint-000015" ] || fail "no checkpoints"
run "$PY" -c "
import sys, torch
from transformers import AutoModelForTokenClassification
m = AutoModelForTokenClassification.from_pretrained(sys.argv[1])
assert m.config.num_labels == 1 and m.score.weight.abs().sum() > 0
print(type(m).__name__)" "$ckpt"
expect_code 0
expect_stdout "LlamaForTokenClassification"
# Resume from the middle: the same critic as the uninterrupted run.
run "$CA_BIN/ca-train" value "${args[@]}" --out "$WORK/split" --steps 15 --checkpoint-every 15
expect_code 0
run "$CA_BIN/ca-train" value "${args[@]}" --out "$WORK/split" --steps 30 --checkpoint-every 15 --resume
expect_code 0
expect_stderr "updates 16..30"
cmp -s "$ckpt/model.safetensors" "$WORK/split/checkpoint-000030/model.safetensors" || fail "resumed critic differs"
# Failures: a missing data file, a record without a reward among good ones.
run "$CA_BIN/ca-train" value --model "$WORK/tiny" --data "$WORK/absent.jsonl" --out "$WORK/v2"
expect_code 66
{ head -3 "$WORK/toy.jsonl"; head -1 "$WORK/toy.jsonl" | python3 -c "import json,sys; r=json.load(sys.stdin); del r['reward']; print(json.dumps(r))"; } >"$WORK/noreward.jsonl"
run "$CA_BIN/ca-train" value --model "$WORK/tiny" --data "$WORK/noreward.jsonl" --out "$WORK/v3" --steps 1 --batch 2
expect_code 1
expect_stderr "noreward.jsonl:4: no reward.value"
finish
