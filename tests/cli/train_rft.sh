# ca-train rft on a tiny random Llama (SmolLM2's tokenizer): the filter keeps 8 of 12 toy trajectories, the NLL
# of their action tokens falls over 12 updates, checkpoints load in transformers, --resume after 6 updates ends
# with the same weights and losses as the uninterrupted run, and the failure paths exit with their codes.
source "$(dirname "$0")/lib.bash"
source "$CA_SOURCE_DIR/tests/model/setup.bash"
train="$CA_BIN/ca-train"
run "$PY" "$CA_SOURCE_DIR/tests/model/model_reference.py" tiny "$WORK/tiny" --arch llama --tokenizer "$SMOLLM2"
expect_code 0
python3 "$CA_SOURCE_DIR/tests/train/make_trajectories.py" "$WORK/toy.jsonl"
args=(--model "$WORK/tiny" --data "$WORK/toy.jsonl" --batch 4 --micro-batch 2 --lr 3e-3 --warmup 2
      --checkpoint-every 4 --seed 5 -j 2)

run "$train" rft "${args[@]}" --out "$WORK/full" --steps 12
expect_code 0
expect_stderr "kept 8 of 12 trajectories (invalid tool call 'rm': 1, repeated failing call 'bash': 1, reward <= 0: 2)"
cat "$WORK/stderr"
[ "$(wc -l <"$WORK/full/log.jsonl")" -eq 12 ] || fail "log.jsonl has $(wc -l <"$WORK/full/log.jsonl") lines, not 12"
for f in config.json model.safetensors tokenizer.json optimizer.safetensors trainer_state.json; do
  [ -f "$WORK/full/checkpoint-000012/$f" ] || fail "checkpoint-000012/$f is missing"
done
[ -d "$WORK/full/checkpoint-000004" ] && [ -d "$WORK/full/checkpoint-000008" ] || fail "no checkpoint every 4 updates"
# The loss falls: the mean of the last three updates at least 2 nats (a 7x lower perplexity) under the first
# update's, which is the starting model's NLL on its batch (measured before the update).
python3 - "$WORK/full/log.jsonl" <<'PY' || fail "the NLL did not fall"
import json, sys
log = [json.loads(l) for l in open(sys.argv[1])]
assert [r["step"] for r in log] == list(range(1, 13))
first, last = log[0]["loss"], sum(r["loss"] for r in log[-3:]) / 3
print(f"nll first update {first:.4f}, mean of last three {last:.4f}; tokens/s {log[-1]['tokens_per_s']:.0f}")
assert all(r["grad_norm"] > 0 and r["tokens"] > r["action_tokens"] > 0 for r in log)
assert log[0]["lr"] == 1.5e-3 and log[1]["lr"] == 3e-3
sys.exit(0 if last < first - 2.0 else 1)
PY
# What ca-train writes is a Hugging Face checkpoint: transformers loads it and its NLL on the data is the low one.
run "$PY" -c "
import sys, torch
from transformers import AutoModelForCausalLM
m = AutoModelForCausalLM.from_pretrained(sys.argv[1])
print('loaded', sum(p.numel() for p in m.parameters()), 'parameters')" "$WORK/full/checkpoint-000012"
expect_code 0

# Resume: 6 updates, then --resume to 12: same weights (byte for byte) and the same losses.
run "$train" rft "${args[@]}" --out "$WORK/split" --steps 6
expect_code 0
run "$train" rft "${args[@]}" --out "$WORK/split" --steps 12 --resume
expect_code 0
expect_stderr "updates 7..12"
cmp -s "$WORK/full/checkpoint-000012/model.safetensors" "$WORK/split/checkpoint-000012/model.safetensors" ||
  fail "resumed weights differ from the uninterrupted run's"
cmp -s "$WORK/full/checkpoint-000012/optimizer.safetensors" "$WORK/split/checkpoint-000012/optimizer.safetensors" ||
  fail "resumed optimizer state differs"
python3 - "$WORK/full/log.jsonl" "$WORK/split/log.jsonl" <<'PY' || fail "resumed losses differ"
import json, sys
a, b = ([(r["step"], r["loss"], r["grad_norm"]) for r in map(json.loads, open(p))] for p in sys.argv[1:])
sys.exit(0 if a == b else 1)
PY

# Failure paths: other options on resume, a bad record among good ones, over the context, no model, bad flags.
run "$train" rft "${args[@]}" --out "$WORK/split" --steps 12 --resume --batch 2
expect_code 65
expect_stderr "--resume with other run options or data than the checkpoint's"
{ cat "$WORK/toy.jsonl"; echo '{"broken": '; } >"$WORK/bad.jsonl"
run "$train" rft --model "$WORK/tiny" --data "$WORK/bad.jsonl" --out "$WORK/bad" --steps 1 --batch 2
expect_code 1
expect_stderr "bad.jsonl:13:"
[ -d "$WORK/bad/checkpoint-000001" ] || fail "the good records were not trained on"
run "$train" rft --model "$WORK/tiny" --data "$WORK/toy.jsonl" --out "$WORK/ctx" --steps 1 --max-context 50 --fail-fast
expect_code 65
expect_stderr "toy.jsonl:1: "
expect_stderr "over the maximum context of 50"
run "$train" rft --model "$WORK/absent" --data "$WORK/toy.jsonl" --out "$WORK/x"
expect_code 66
run "$train" rft --model "$WORK/tiny" --out "$WORK/x" --steps 0
expect_code 64
run "$train" --help
expect_code 0
finish
