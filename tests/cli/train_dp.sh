# Data-parallel ca-train on the CPU: two processes over gloo with torchrun's variables (RANK, WORLD_SIZE,
# LOCAL_RANK, MASTER_ADDR, MASTER_PORT) train rft, value and ppo on the same global batches as one process with twice
# the gradient accumulation; losses per step, explained variance and the final checkpoints agree within float32
# noise (1e-5 relative), only rank 0 writes log.jsonl and checkpoints, a two-rank checkpoint resumes in one process,
# and a rank that finds no store, or a malformed variable, exits with a clear error and its code.
source "$(dirname "$0")/lib.bash"
source "$CA_SOURCE_DIR/tests/model/setup.bash"
train="$CA_BIN/ca-train"
run "$PY" "$CA_SOURCE_DIR/tests/model/model_reference.py" tiny "$WORK/tiny" --arch llama --tokenizer "$SMOLLM2"
expect_code 0
python3 "$CA_SOURCE_DIR/tests/train/make_trajectories.py" "$WORK/toy.jsonl"
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# two_ranks NAME CA-TRAIN-ARGS...: ranks 0 and 1 of one gloo group, their stderr in $WORK/NAME.rankR.err; sets
# code0 and code1.
two_ranks() {
  local name=$1 port
  shift
  port=$(free_port)
  for r in 0 1; do
    env RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT="$port" "$train" "$@" \
      >"$WORK/$name.rank$r.out" 2>"$WORK/$name.rank$r.err" &
    eval "pid$r=$!"
  done
  wait "$pid0"
  code0=$?
  wait "$pid1"
  code1=$?
  [ "$code0" -eq 0 ] && [ "$code1" -eq 0 ] ||
    { fail "$name: ranks exited $code0 and $code1"; cat "$WORK/$name.rank0.err" "$WORK/$name.rank1.err" >&2; }
}

# same_run ONE TWO KEYS: the logs of ONE (one process) and TWO (two ranks) have the same steps and KEYS within 1e-5
# relative (float32 sums in another order; under 1e-3, 1e-8 absolute), and their last checkpoints the same tensors within 1e-5 (relative to
# each tensor's largest value).
same_run() {
  "$PY" - "$@" <<'PY'
import glob, json, sys
from safetensors.torch import load_file
one, two, keys = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
logs = [[json.loads(l) for l in open(f"{d}/log.jsonl")] for d in (one, two)]
assert [r["step"] for r in logs[0]] == [r["step"] for r in logs[1]], "other steps"
worst = 0.0
for a, b in zip(*logs):
    assert a["tokens"] == b["tokens"] and a["action_tokens"] == b["action_tokens"], (a, b)
    for k in keys:
        rel = abs(a[k] - b[k]) / max(abs(a[k]), 1e-3)  # values under 1e-3: 1e-8 absolute
        worst = max(worst, rel)
        assert rel <= 1e-5, f"step {a['step']} {k}: {a[k]} vs {b[k]} ({rel:.2e} relative)"
last = sorted(glob.glob(f"{one}/checkpoint-*"))[-1].split("/")[-1]
wdiff = 0.0
for f in sorted(glob.glob(f"{one}/{last}/**/model.safetensors", recursive=True)):
    x, y = load_file(f), load_file(f.replace(one, two, 1))
    assert x.keys() == y.keys()
    for n in x:
        d = ((x[n] - y[n]).abs().max() / x[n].abs().max().clamp(min=1e-6)).item()
        wdiff = max(wdiff, d)
        assert d <= 1e-5, f"{f} {n}: {d:.2e} relative"
print(f"{len(logs[0])} steps, {','.join(keys)} within {worst:.2e} relative; {last} weights within {wdiff:.2e}")
PY
}

# rft: global batch 4; one process accumulates 4 micro-batches of 1, each rank 2 of its 2 sequences.
rft=(rft --model "$WORK/tiny" --data "$WORK/toy.jsonl" --batch 4 --micro-batch 1 --lr 3e-3 --warmup 2 --steps 6
     --checkpoint-every 3 --seed 5 -j 1)
run "$train" "${rft[@]}" --out "$WORK/rft1"
expect_code 0
two_ranks rft2 "${rft[@]}" --out "$WORK/rft2"
[ "$(wc -l <"$WORK/rft2/log.jsonl")" -eq 6 ] || fail "log.jsonl has $(wc -l <"$WORK/rft2/log.jsonl") lines, not 6"
grep -qF "(2 ranks, gloo)" "$WORK/rft2.rank0.err" || fail "rank 0 does not report its group"
[ ! -s "$WORK/rft2.rank1.err" ] || fail "rank 1 wrote to stderr: $(head -3 "$WORK/rft2.rank1.err")"
same_run "$WORK/rft1" "$WORK/rft2" loss,grad_norm || fail "rft: two ranks differ from one process"
# The two ranks' checkpoint is an ordinary one: one process resumes it to the same end.
cp -r "$WORK/rft2" "$WORK/rft21"
rm -rf "$WORK/rft21/checkpoint-000006"
run "$train" "${rft[@]}" --out "$WORK/rft21" --resume
expect_code 0
expect_stderr "updates 4..6"
same_run "$WORK/rft1" "$WORK/rft21" loss,grad_norm || fail "rft: one process resuming two ranks' checkpoint differs"

# value: explained variance is the whole batch's, from both ranks' sums.
value=(value --model "$WORK/tiny" --data "$WORK/toy.jsonl" --batch 4 --micro-batch 1 --lr 3e-3 --steps 2 --seed 3
       -j 1)
run "$train" "${value[@]}" --out "$WORK/value1"
expect_code 0
cp "$WORK/stderr" "$WORK/value1.err"
two_ranks value2 "${value[@]}" --out "$WORK/value2"
same_run "$WORK/value1" "$WORK/value2" value_loss,explained_variance,value_mean,grad_norm ||
  fail "value: two ranks differ from one process"
python3 - "$WORK/value1.err" "$WORK/value2.rank0.err" <<'PY' || fail "value: explained variance over the data differs"
import re, sys
ev = [re.search(r"explained variance over the data (\S+) -> (\S+);", open(f).read()).groups() for f in sys.argv[1:]]
print("explained variance over the data, one process and two ranks:", ev)
assert all(abs(float(a) - float(b)) <= 1e-5 for a, b in zip(*ev))
PY

# ppo: two minibatches of 4 sequences, each split over the ranks; whitening and explained variance over both.
ppo=(ppo --model "$WORK/tiny" --critic "$WORK/value1/checkpoint-000002" --data "$WORK/toy.jsonl" --batch 8
     --micro-batch 1 --minibatches 2 --lr 1e-3 --critic-lr 1e-3 --warmup 1 --kl-coef 0.05 --steps 2 --seed 4 -j 1)
run "$train" "${ppo[@]}" --out "$WORK/ppo1"
expect_code 0
two_ranks ppo2 "${ppo[@]}" --out "$WORK/ppo2"
same_run "$WORK/ppo1" "$WORK/ppo2" \
  policy_loss,value_loss,kl,entropy,clip_fraction,explained_variance,advantage_mean,grad_norm,critic_grad_norm ||
  fail "ppo: two ranks differ from one process"

# Failure paths. A rank whose store never comes (rank 1 alone, nobody listening) gives up after --dist-timeout; the
# outer timeout only bounds a hang, which is a failure (124).
run timeout 120 env RANK=1 WORLD_SIZE=2 LOCAL_RANK=1 MASTER_ADDR=127.0.0.1 MASTER_PORT="$(free_port)" \
  "$train" "${rft[@]}" --out "$WORK/alone" --dist-timeout 2
expect_code 74
expect_stderr "ca-train: error: "
expect_stderr "rank 1 of 2: no rendezvous at the store 127.0.0.1:"
run env RANK=2 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=1 "$train" "${rft[@]}" --out "$WORK/bad"
expect_code 64
expect_stderr "RANK=2 is outside 0..1"
run env RANK=0 WORLD_SIZE=2 "$train" "${rft[@]}" --out "$WORK/bad"
expect_code 64
expect_stderr "MASTER_ADDR is not set"
finish
