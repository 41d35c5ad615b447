# ca-train value -> ppo -> warmup on a tiny random Llama (SmolLM2's tokenizer) and the toy trajectories: the step
# log has every field, a PPO run split by --resume ends with the same actor, critic and log as an uninterrupted
# one, warm-up groups samples by task_id, and the failure paths exit with their codes. (That PPO learns is
# PpoIterationTest's: common/train/ppo_test.cpp.)
source "$(dirname "$0")/lib.bash"
source "$CA_SOURCE_DIR/tests/model/setup.bash"
train="$CA_BIN/ca-train"
run "$PY" "$CA_SOURCE_DIR/tests/model/model_reference.py" tiny "$WORK/tiny" --arch llama --tokenizer "$SMOLLM2"
expect_code 0
python3 "$CA_SOURCE_DIR/tests/train/make_trajectories.py" "$WORK/toy.jsonl"
run "$train" value --model "$WORK/tiny" --data "$WORK/toy.jsonl" --out "$WORK/v" --steps 2 --batch 4 --lr 3e-3 -j 2
expect_code 0
args=(--model "$WORK/tiny" --critic "$WORK/v/checkpoint-000002" --data "$WORK/toy.jsonl" --batch 4 --micro-batch 2
      --minibatches 2 --epochs 1 --lr 1e-3 --critic-lr 1e-3 --warmup 2 --kl-coef 0.05 --checkpoint-every 2 --seed 4 -j 2)
run "$train" ppo "${args[@]}" --out "$WORK/full" --steps 4
expect_code 0
cat "$WORK/stderr"
for f in model.safetensors optimizer.safetensors critic/model.safetensors critic/optimizer.safetensors; do
  [ -f "$WORK/full/checkpoint-000004/$f" ] || fail "checkpoint-000004/$f is missing"
done
python3 - "$WORK/full/log.jsonl" <<'PY' || fail "the step log lacks fields"
import json, sys
log = [json.loads(l) for l in open(sys.argv[1])]
keys = {"reward_mean", "reward_histogram", "pass_rate", "kl", "entropy", "clip_fraction", "explained_variance",
        "grad_norm", "critic_grad_norm", "policy_loss", "value_loss", "tokens_per_s", "peak_rss_mib", "lr", "updates"}
assert [r["step"] for r in log] == [1, 2, 3, 4] and all(keys <= r.keys() for r in log), log[0].keys()
assert all(r["updates"] == 2 and r["entropy"] > 0 and r["kl"] >= 0 for r in log)
assert 0 < log[0]["kl"] < log[-1]["kl"], (log[0]["kl"], log[-1]["kl"])  # the actor moves off the reference
print("step 4:", {k: log[-1][k] for k in ("reward_mean", "pass_rate", "kl", "clip_fraction", "explained_variance")})
PY
run "$train" ppo "${args[@]}" --out "$WORK/split" --steps 2
expect_code 0
run "$train" ppo "${args[@]}" --out "$WORK/split" --steps 4 --resume
expect_code 0
expect_stderr "steps 3..4"
for f in model.safetensors critic/model.safetensors optimizer.safetensors critic/optimizer.safetensors; do
  cmp -s "$WORK/full/checkpoint-000004/$f" "$WORK/split/checkpoint-000004/$f" || fail "resumed $f differs"
done
python3 - "$WORK/full/log.jsonl" "$WORK/split/log.jsonl" <<'PY' || fail "resumed log differs"
import json, sys
a, b = ([(r["step"], r["policy_loss"], r["value_loss"], r["grad_norm"]) for r in map(json.loads, open(p))] for p in sys.argv[1:])
sys.exit(0 if a == b else 1)
PY
# Warm-up: 3 tasks of 4 samples (the toy's records regrouped), 2 tasks per step.
python3 -c "
import json, sys
for i, l in enumerate(open(sys.argv[1])):
    r = json.loads(l); r['task_id'] = 't%d' % (i % 3); print(json.dumps(r))" "$WORK/toy.jsonl" >"$WORK/groups.jsonl"
run "$train" warmup --model "$WORK/tiny" --data "$WORK/groups.jsonl" --out "$WORK/w" --steps 2 --batch 2 --lr 1e-3 -j 2
expect_code 0
python3 - "$WORK/w/log.jsonl" <<'PY' || fail "warm-up log wrong"
import json, sys
log = [json.loads(l) for l in open(sys.argv[1])]
assert all(r["groups"] == 2 and r["action_tokens"] > 0 and "value_loss" not in r for r in log), log
PY
# Failures: no --critic, a bad critic directory, other options on resume.
run "$train" ppo --model "$WORK/tiny" --data "$WORK/toy.jsonl" --out "$WORK/x"
expect_code 64
run "$train" ppo --model "$WORK/tiny" --critic "$WORK/absent" --data "$WORK/toy.jsonl" --out "$WORK/x" --steps 1
expect_code 65
run "$train" ppo "${args[@]}" --out "$WORK/split" --steps 4 --resume --epochs 2
expect_code 65
expect_stderr "--resume with other run options"
finish
