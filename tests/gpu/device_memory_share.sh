#!/usr/bin/env bash
# The device-memory share (docs/EXPLOITS.md, "Shares"; issue 23): with an MPS control daemon running, a sandboxed
# command given --device-memory cannot take more of the GPU than that, whatever it calls, and one within its share
# runs. Run by tests/gpu/run.sh (step device_memory); CA_BIN defaults to build-gpu/bin. Its first GPU run (H100, 2026-12-05)
# failed before any check: its probe was PyTorch, which the sandbox could not see; the probe is now plain CUDA.
# Prints one line per case, "ok <case>" or "FAIL: ...", and "ok" at the end; exits 1 on a failure, 0 with
# "SKIP: ..." when MPS cannot be started here (then nothing enforces the share: say so in the results).
CA_SOURCE_DIR=${CA_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
CA_BIN=${CA_BIN:-$CA_SOURCE_DIR/build-gpu/bin}
export CA_SOURCE_DIR CA_BIN
. "$CA_SOURCE_DIR/tests/cli/lib.bash"

command -v nvidia-cuda-mps-control >/dev/null || { echo "SKIP: no nvidia-cuda-mps-control"; exit 0; }
export CUDA_MPS_PIPE_DIRECTORY=$WORK/mps-pipe CUDA_MPS_LOG_DIRECTORY=$WORK/mps-log
mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
chmod 0777 "$CUDA_MPS_PIPE_DIRECTORY"  # root's sandbox runs as nobody, who must reach the daemon's pipes
nvidia-cuda-mps-control -d || { echo "SKIP: the MPS control daemon does not start here"; exit 0; }
# The daemon's logs go where the caller keeps them (tests/gpu/run.sh's $OUT): why a server did not start is there.
trap 'echo quit | nvidia-cuda-mps-control; [ -z "${OUT:-}" ] || cp -r "$CUDA_MPS_LOG_DIRECTORY" "$OUT/mps-log"; rm -rf "$WORK"' EXIT
[ -e "$CUDA_MPS_PIPE_DIRECTORY/control" ] || { echo "SKIP: no MPS control pipe"; exit 0; }

run "$CA_BIN/ca-sandbox" create "$CA_SOURCE_DIR/examples/tasks.jsonl" --dir "$WORK/ws" --id example/linear_leaky_relu
expect_code 0
ws=$(cat "$WORK/stdout")
nvcc -o "$ws/take" "$CA_SOURCE_DIR/tests/gpu/take_device_memory.cu" || fail "nvcc could not build the probe"
chmod 755 "$ws/take"
# Outside the sandbox first: where MPS serves no client at all (seen on the H100 machine: "MPS client failed to
# connect"), nothing enforces a share, and the sandbox is not the cause.
if ! "$ws/take" 1 >/dev/null 2>"$WORK/direct.err"; then
  echo "SKIP: MPS serves no client here, so no share is enforced: $(tail -1 "$WORK/direct.err")"; exit 0
fi
# take SHARE GIB: the probe, in the sandbox with a device-memory share of SHARE, allocates GIB GiB.
take() {
  run "$CA_BIN/ca-sandbox" exec "$ws" --gpu --wall 120 --cpu 120 --memory 64G --device-memory "$1" -- ./take "$2"
}
take 2G 4
[ "$code" -ne 0 ] || fail "4 GiB taken with a 2 GiB share"
if grep -qiE "out of memory" "$WORK/stderr"; then
  [ "$code" -ne 0 ] && echo "ok a 4 GiB allocation with a 2 GiB share is refused"
else
  fail "the refusal does not say out of memory: $(tail -2 "$WORK/stderr")"
fi
take 8G 4
expect_code 0; expect_stdout "took 4"
[ "$code" -eq 0 ] && echo "ok a 4 GiB allocation within an 8 GiB share runs"
finish
