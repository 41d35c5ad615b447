#!/usr/bin/env bash
# The CUDA example candidates through the warm judge on a GPU (issue 24 item 5): `ca-judge ask verify | ca-judge ask
# profile | ca-reward` against one `ca-judge serve` gives every verdict and reward examples/candidates/cuda/EXPECTED
# names, as verify_cuda_examples.sh shows for the cold tools. Run by tests/gpu/run.sh; CA_BIN defaults to
# build-gpu/bin and CA_SOURCE_DIR to this checkout.
CA_SOURCE_DIR=${CA_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
CA_BIN=${CA_BIN:-$CA_SOURCE_DIR/build-gpu/bin}
export CA_SOURCE_DIR CA_BIN
. "$CA_SOURCE_DIR/tests/cli/lib.bash"
dir=$CA_SOURCE_DIR/examples/candidates/cuda
export CA_CACHE_DIR=$WORK/cache
compiled=${CA_COMPILED_CACHE:-$HOME/.cache/cuda-agent/compiled}
mkdir -p "$CA_CACHE_DIR" "$compiled" && ln -s "$compiled" "$CA_CACHE_DIR/compiled"
logs=${OUT:-$WORK}

"$CA_BIN/ca-judge" -j 8 serve --socket "$WORK/judge.sock" --tasks "$dir/tasks.jsonl" --timeout 60 --cuda-arch sm_90 \
  >"$WORK/serve_out" 2>"$logs/judge_serve.log" &
judge=$!
until grep -q "listening on" "$WORK/serve_out" 2>/dev/null || ! kill -0 "$judge" 2>/dev/null; do sleep 0.1; done
grep -q "listening on" "$WORK/serve_out" || fail "ca-judge serve did not start: $(head -3 "$logs/judge_serve.log")"
start=$(date +%s)
"$CA_BIN/ca-judge" ask --socket "$WORK/judge.sock" verify "$dir/candidates.jsonl" 2>"$logs/judge_verify_err.log" |
  "$CA_BIN/ca-judge" ask --socket "$WORK/judge.sock" profile 2>"$logs/judge_profile_err.log" |
  "$CA_BIN/ca-reward" >"$WORK/rewarded.jsonl" 2>"$logs/judge_reward_err.log"
codes=("${PIPESTATUS[@]}")
echo "ca-judge ask verify | ask profile | ca-reward took $(($(date +%s) - start)) s"
[ "${codes[0]}" -eq 0 ] || fail "ask verify exited ${codes[0]}: $(head -3 "$logs/judge_verify_err.log")"
[ "${codes[1]}" -eq 0 ] || fail "ask profile exited ${codes[1]}: $(head -3 "$logs/judge_profile_err.log")"
[ "${codes[2]}" -eq 0 ] || fail "ca-reward exited ${codes[2]}: $(head -3 "$logs/judge_reward_err.log")"
cp "$WORK/rewarded.jsonl" "$logs/judge_cuda_examples.jsonl" 2>/dev/null
python3 "$CA_SOURCE_DIR/tests/cli/check_examples.py" "$WORK/rewarded.jsonl" "$(grep -c . "$dir/EXPECTED")" profile ||
  fail "warm verdicts or rewards differ from EXPECTED"
kill -TERM "$judge"
wait "$judge"
finish
