# The runner's shares on cpu (docs/EXPLOITS.md, "Shares"): candidates that take disk or memory beyond their share fail
# at run with a message naming the share, and take nothing from the host on the way; their honest twin passes.
. "$(dirname "$0")/lib.bash"
dir=$CA_SOURCE_DIR/examples/candidates/cpu

grep -E '"cpu/relu_rand__(fills_run_dir|memfd_memory|takes_memory|correct)"' "$dir/candidates.jsonl" >"$WORK/in.jsonl"
[ "$(grep -c . "$WORK/in.jsonl")" -eq 4 ] || fail "the share examples are not all in candidates.jsonl"
shm_before=$(df --output=used -k /dev/shm | tail -1)
run "$CA_BIN/ca-verify" --tasks "$dir/tasks.jsonl" --timeout 20 "$WORK/in.jsonl"
expect_code 0
cp "$WORK/stdout" "$WORK/verified.jsonl"
# verdict ID: the candidate's verify verdict as "ok stage message".
verdict() {
  python3 -c '
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["id"] == sys.argv[2]:
        v = r["verify"]
        print(v["ok"], v["stage"], v["message"])' "$WORK/verified.jsonl" "$1"
}
expect_verdict() {  # ID WORDS...: the verdict holds each of WORDS
  local got
  got=$(verdict "$1")
  shift
  for words in "$@"; do
    [[ "$got" == *"$words"* ]] || fail "verdict lacks '$words': $got"
  done
}
expect_verdict cpu/relu_rand__correct "True"
expect_verdict cpu/relu_rand__fills_run_dir "False run" "forbidden system call 257" "disk share"
expect_verdict cpu/relu_rand__memfd_memory "False run" "forbidden system call 319" "memory share"
expect_verdict cpu/relu_rand__takes_memory "False run" "(memory limit)" "out of memory" "memory share"
# The cheats were stopped at their first byte: /dev/shm (where run directories live) holds no GiB of theirs. Other
# tests may use it meanwhile, so only a gross difference counts.
shm_after=$(df --output=used -k /dev/shm | tail -1)
[ $((shm_after - shm_before)) -lt $((256 * 1024)) ] || fail "/dev/shm grew by $((shm_after - shm_before)) KiB"
finish
