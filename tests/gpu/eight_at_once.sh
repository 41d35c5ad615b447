#!/usr/bin/env bash
# Eight candidates verified at once while one of them takes the device (issue 23, "Shares"): seven cuda examples of
# different verdicts and tests/gpu/takes_the_device.cu (a correct relu that first takes all free device memory and
# all the host RAM its limits allow, and holds them for seconds) go through one `ca-verify -j 8`; then each is
# verified alone (-j 1, one after another). Each of the seven must get the verdict (ok, stage) it gets alone; a
# verdict that a neighbour may have caused (docs/EXPLOITS.md, "Shares") carries judged_alone, and the count of those
# shows whether the taker bit. The taker's own verdicts are printed, not compared: beside neighbours that end and
# free their memory its later trials find room, alone its hoard starves them (ca-profile runs it alone, so its
# reward follows the alone verdict). Run by tests/gpu/run.sh (step eight_at_once); CA_BIN defaults to build-gpu/bin.
CA_SOURCE_DIR=${CA_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
CA_BIN=${CA_BIN:-$CA_SOURCE_DIR/build-gpu/bin}
export CA_SOURCE_DIR CA_BIN
. "$CA_SOURCE_DIR/tests/cli/lib.bash"
dir=$CA_SOURCE_DIR/examples/candidates/cuda
export CA_CACHE_DIR=$WORK/cache  # both runs share the builds; the first one pays for them

python3 - "$dir/candidates.jsonl" "$CA_SOURCE_DIR/tests/gpu/takes_the_device.cu" >"$WORK/eight.jsonl" <<'PY'
import json, sys
keep = ["relu_rand__correct", "relu_rand__identity", "relu_rand__illegal_address", "softmax_cumsum__correct",
        "linear_leaky_relu__cublas", "layernorm_gelu__correct", "attention_rowmax__correct"]
records = {json.loads(l)["id"].split("/", 1)[1]: json.loads(l) for l in open(sys.argv[1])}
for name in keep:
    print(json.dumps(records[name]))
print(json.dumps({"kind": "candidate", "id": "cuda/relu_rand__takes_the_device", "task_id": "example/relu_rand",
                  "backend": "cuda", "files": {"kernels/takes_the_device.cu": open(sys.argv[2]).read()}}))
PY
verify() {  # verify JOBS OUTPUT
  "$CA_BIN/ca-verify" -j "$1" --tasks "$dir/tasks.jsonl" --timeout 20 --cuda-arch sm_90 "$WORK/eight.jsonl" \
    >"$2" 2>>"${OUT:-$WORK}/eight_at_once_err.log"
}
start=$(date +%s)
verify 8 "$WORK/together.jsonl" || fail "ca-verify -j 8 exited $?"
echo "together (-j 8): $(($(date +%s) - start)) s"
start=$(date +%s)
verify 1 "$WORK/alone.jsonl" || fail "ca-verify -j 1 exited $?"
echo "alone (-j 1): $(($(date +%s) - start)) s"
cp "$WORK/together.jsonl" "$WORK/alone.jsonl" "${OUT:-$WORK}/" 2>/dev/null
python3 - "$WORK/together.jsonl" "$WORK/alone.jsonl" <<'PY' || fail "a neighbour's verdict beside the taker differs from the one alone"
import json, sys
def verdicts(path):
    return {r["id"]: r["verify"] for r in map(json.loads, open(path))}
together, alone = verdicts(sys.argv[1]), verdicts(sys.argv[2])
bad = len(together) != 8 or len(alone) != 8
print(f"{'candidate':36} {'together':10} {'alone':10} judged alone after")
for id, v in sorted(alone.items()):
    t = together.get(id, {})
    got = lambda v: "PASS" if v.get("ok") else v.get("stage", "missing")
    first = t.get("judged_alone", {}).get("first_failure", "")
    print(f"{id:36} {got(t):10} {got(v):10} {first[:100]}")
    bad |= got(t) != got(v) and not id.endswith("__takes_the_device")
print(f"{sum('judged_alone' in t for t in together.values())} of {len(together)} judged again alone in the -j 8 run")
sys.exit(1 if bad else 0)
PY
finish
