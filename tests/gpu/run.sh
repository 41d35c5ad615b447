#!/usr/bin/env bash
# Builds the project on the GPU machine against its own torch and runs every
# GPU test, writing logs under $OUT. Carry .debs (Debian packages for the
# header-only and test dependencies the GPU machine lacks, and bubblewrap for
# the sandbox where it has none), made here with:
#   mkdir -p .debs && (cd .debs && apt-get download libcli11-dev nlohmann-json3-dev libgtest-dev libarchive-dev \
#     libarchive13 bubblewrap libcap2 libcurl4-openssl-dev libcpp-httplib-dev libcpp-httplib0.11 libbrotli-dev libbrotli1 \
#     libssl-dev zlib1g-dev)
# and .kb (KernelBench's level1/ and level2/, copied from ../shared/benchmarks/kernelbench). The CPU tests are
# CI's; this script runs what needs the GPU. STEPS="cuda_examples bench" runs only those steps (after configure and
# build), to split a run over calls of the device's time limit.
# CALL_SECONDS (the device call's limit): every step gets at most what is left of it, less PACK_RESERVE (default
# 30 s); a step with under 20 s left is skipped and says so; agent_builtin stops its episodes in time to keep them.
# PACK=1: at the end, $OUT becomes one out.tgz of its files under PACK_FILE_MB (default 4) MiB each, with
# left_out.txt naming the larger ones (a device call returns a few files of at most 64 MiB together).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/build-gpu/out}
mkdir -p "$OUT"
status=0
end_at=
[ -z "${CALL_SECONDS:-}" ] || end_at=$(($(date +%s) + CALL_SECONDS - ${PACK_RESERVE:-30}))
pack() {
  [ "${PACK:-0}" = 1 ] || return 0
  (cd "$OUT" && find . -type f -size +"${PACK_FILE_MB:-4}"M -printf '%p %s\n' >left_out.txt &&
    find . -type f -size -"$((${PACK_FILE_MB:-4} * 1024))"k ! -name out.tgz -print0 >/tmp/ca-pack.list &&
    { tar czf /tmp/ca-out.tgz --warning=no-file-changed --null -T /tmp/ca-pack.list || [ $? = 1 ]; } && find . -mindepth 1 -delete && mv /tmp/ca-out.tgz out.tgz)
}
trap pack EXIT
# watch NAME: every 20 s, what the project's processes are doing (state, kernel wait channel, threads), so a step
# that a time limit cuts off still shows where it stood.
watch() {
  while sleep 20; do
    { date +%T; ps -eo pid,ppid,stat,etimes,nlwp,wchan:28,args --sort=pid |
        grep -E 'ca-[a-z]+|bwrap|setpriv|python|nvcc|cicc|ptxas|g\+\+' | grep -v grep | cut -c1-220; } >>"$OUT/$1.ps" 2>&1
  done
}
wants() {  # wants NAME: whether STEPS (a space-separated list; all steps when unset) has step NAME
  [ -z "${STEPS:-}" ] || [[ " configure build $STEPS " == *" $1 "* ]]
}
step() {  # step NAME COMMAND...: runs a step (unless STEPS leaves it out), logs it, remembers a failure
  local name=$1 start=$SECONDS; shift
  wants "$name" || return
  echo "== $name" | tee -a "$OUT/summary.txt"
  if [ -n "$end_at" ]; then
    local left=$((end_at - $(date +%s)))
    if [ "$left" -lt 20 ]; then echo "   skipped: ${left} s of the call left" | tee -a "$OUT/summary.txt"; status=1; return; fi
    set -- timeout -s INT -k 10 "$left" "$@"
  fi
  watch "$name" & local watcher=$!
  if "$@" >"$OUT/$name.log" 2>&1; then echo "   ok ($((SECONDS - start)) s)" | tee -a "$OUT/summary.txt"
  else echo "   FAILED after $((SECONDS - start)) s (see $name.log)" | tee -a "$OUT/summary.txt"; tail -20 "$OUT/$name.log"; status=1; fi
  kill "$watcher" 2>/dev/null
}

deps=/tmp/ca-debs
mkdir -p "$deps"
for f in .debs/*.deb; do [ -e "$f" ] && dpkg -x "$f" "$deps"; done
# libcurl's headers come from the carried -dev package; the library is the machine's own (Debian's needs libraries
# the machine lacks), so the carried link to it goes.
rm -f "$deps"/usr/lib/x86_64-linux-gnu/libcurl.so "$deps"/usr/lib/x86_64-linux-gnu/libcurl.a
# Host-side tools link libarchive, which the GPU machine may lack (the sandboxed runner does not need it).
export LD_LIBRARY_PATH="$deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# The sandbox needs bwrap on PATH; use the carried one where the machine has none.
if ! command -v bwrap >/dev/null && [ -x "$deps/usr/bin/bwrap" ]; then
  mkdir -p /tmp/ca-bin
  printf '#!/bin/sh\nLD_LIBRARY_PATH=%s exec %s "$@"\n' "$deps/usr/lib/x86_64-linux-gnu:$deps/lib/x86_64-linux-gnu" "$deps/usr/bin/bwrap" >/tmp/ca-bin/bwrap
  chmod +x /tmp/ca-bin/bwrap
  export PATH=/tmp/ca-bin:$PATH
fi
# The machine's python3 has the torch that LibTorch here comes from; it compiles the baselines.
[ -x .venv/bin/python ] || export CA_PYTHON=${CA_PYTHON:-python3}
torch_prefix=$(python3 -c 'import torch.utils; print(torch.utils.cmake_prefix_path)')
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$OUT/gpu.txt" 2>&1
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' >> "$OUT/gpu.txt" 2>&1
{ echo "bwrap: $(command -v bwrap) setpriv: $(command -v setpriv) LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
  ldconfig -p | grep -E 'libcuda\.so\.1|libcudart\.so|libcublas\.so' ; ls -l /dev/nvidia* ; } >> "$OUT/gpu.txt" 2>&1

step configure cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTORCH_CUDA_ARCH_LIST=9.0 \
  -DCMAKE_PREFIX_PATH="$deps/usr;$deps/usr/lib/x86_64-linux-gnu/cmake;$torch_prefix"
# BUILD_TARGETS (e.g. "ca-crawl ca-filter"): only those, for a call that runs no unit tests.
# shellcheck disable=SC2086 # the targets are words
# -k 0: a target that fails to build does not stop the others, nor the steps that need only those.
step build cmake --build build-gpu -j "$(nproc)" ${BUILD_TARGETS:+--target $BUILD_TARGETS} -- -k 0
step cuda_runner build-gpu/bin/ca_core_tests --gtest_filter="${RUNNER_TESTS:-CudaRunner*:CudaDigest*:CudaClock*:CpuDevice*:Runner*:Protocol*:OutputRegion*}"
# The compiled baselines of the examples and the bench, in a few warm bridge processes rather than one cold one each.
cat examples/candidates/cuda/tasks.jsonl bench/tasks.jsonl >"$OUT/baseline_tasks.jsonl"
step precompile build-gpu/bin/ca-profile --precompile --backend cuda -j "${PRECOMPILE_JOBS:-4}" --tasks "$OUT/baseline_tasks.jsonl"
step cuda_examples env OUT="$OUT" bash tests/gpu/verify_cuda_examples.sh
# The device-memory share through MPS (ca-sandbox exec --device-memory); not yet run on a GPU.
step device_memory timeout "${DEVMEM_TIMEOUT:-300}" env CA_BIN="$PWD/build-gpu/bin" OUT="$OUT" bash tests/gpu/device_memory_share.sh
# Eight candidates verified at once, one taking the device: the others get the verdicts they get alone (issue 23).
step eight_at_once timeout "${EIGHT_TIMEOUT:-300}" env CA_BIN="$PWD/build-gpu/bin" OUT="$OUT" bash tests/gpu/eight_at_once.sh
# The GPU's clocks, power and temperature every 20 ms while the bench runs, to line up with its rounds (samples_began).
# nvidia-smi's loop outlives a SIGTERM: it is killed outright, and waited for, before the pack reads its file.
if wants bench; then
  nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active \
    --format=csv,noheader,nounits -lms 20 >"$OUT/bench.clocks.csv" 2>&1 & clocks=$!
fi
step bench timeout "${BENCH_TIMEOUT:-300}" bash bench/run.sh cuda "$OUT/bench"
[ -z "${clocks:-}" ] || { kill -9 "$clocks"; wait "$clocks"; } 2>/dev/null
# The CUDA examples through the warm judge: the same verdicts and rewards as the cold tools (issue 24 item 5).
step judge_cuda_examples timeout "${JUDGE_EXAMPLES_TIMEOUT:-420}" env OUT="$OUT" bash tests/gpu/judge_cuda_examples.sh
# Cold against warm (ca-judge serve) verify + profile of a changed kernel on the bench tasks (issue 24 item 5).
step judge_warm timeout "${JUDGE_BENCH_TIMEOUT:-420}" env CA_BIN="$PWD/build-gpu/bin" bash bench/judge_warm.sh cuda \
  "$OUT/judge_warm"
# Whether the gemm's per-process modes exist in plain PyTorch too, and which flush removes them (bench/RESULTS.md).
step spread_probe timeout "${PROBE_TIMEOUT:-240}" python3 bench/spread_probe.py
step cuda_interpreter env CA_TEST_DEVICE=cuda build-gpu/bin/ca_torch_tests --gtest_filter='Programs/*:TensorsTest.*'
[ -f .kb/reference-scale16.jsonl ] && export KB_REFERENCE=${KB_REFERENCE:-$PWD/.kb/reference-scale16.jsonl}
step pipeline timeout "${PIPE_TIMEOUT:-240}" env CA_BIN=build-gpu/bin KB_BENCHMARKS="${KB_BENCHMARKS:-$PWD/.kb}" \
  bash tests/gpu/pipeline.sh "$OUT/pipeline"
# The built-in policy's kernels of every pattern program, every cuda variant, through ca-verify (issue 17: each pattern
# tested on both backends; CI runs the cpu ones, and compiles the cuda sources with nvcc: CudaSourcesCompileWithNvcc).
step builtin_patterns env CA_TEST_DEVICE=cuda build-gpu/bin/ca_agent_tests \
  --gtest_filter='KernelWriterTest.EveryPatternPassesVerificationOnCuda'
# The built-in policy through ca-rollout on every KB_EVERY-th KernelBench problem at full size (NO_COMPILE=1: eager only).
# Within a call's budget its episodes stop 30 s before the call's end, so the step can write its summary.
[ -z "$end_at" ] || export ROLLOUT_END_AT=${ROLLOUT_END_AT:-$((end_at - 30))}
step agent_builtin timeout "${AGENT_TIMEOUT:-420}" env CA_BIN="$PWD/build-gpu/bin" KB_BENCHMARKS="${KB_BENCHMARKS:-$PWD/.kb}" \
  bash tests/gpu/agent_builtin.sh "$OUT/agent"
# ca-train ppo's step against the same step in PyTorch (bench/ppo_step.sh), SmolLM2-135M at SMOLLM2, fp32 and bf16.
# Without SMOLLM2, SMOLLM2_CONFIG (default .smol/SmolLM2-135M-Instruct: its config and tokenizer, carried, no weights)
# gives random weights of the same architecture (bench/random_checkpoint.py); tokens/s does not depend on their values.
if [ -z "${SMOLLM2:-}" ] && [ -f "${SMOLLM2_CONFIG:-.smol/SmolLM2-135M-Instruct}/config.json" ] &&
  wants ppo_bench; then
  python3 bench/random_checkpoint.py "${SMOLLM2_CONFIG:-.smol/SmolLM2-135M-Instruct}" /tmp/ca-smollm2-random \
    >>"$OUT/summary.txt" 2>&1 && export SMOLLM2=/tmp/ca-smollm2-random
fi
# STEPS means this script's steps here; the bench's own STEPS (its timed steps) is PPO_STEPS.
step ppo_bench timeout "${PPO_BENCH_TIMEOUT:-300}" env CA_BIN="$PWD/build-gpu/bin" CA_PYTHON="${CA_PYTHON:-python3}" \
  STEPS="${PPO_STEPS:-5}" bash bench/ppo_step.sh cuda
# The training recipe (tests/gpu/train_recipe.sh; not yet run end to end): built-in -> rft -> value -> PPO, and PPO alone.
step train_recipe timeout "${RECIPE_TIMEOUT:-540}" env CA_BIN="$PWD/build-gpu/bin" bash tests/gpu/train_recipe.sh "$OUT/recipe"
# The full-size KernelBench import takes longest; it goes last, within what the machine's call has left.
step kernelbench_import timeout "${KB_TIMEOUT:-240}" env KB_BENCHMARKS="${KB_BENCHMARKS:-$PWD/.kb}" \
  CA_BIN=build-gpu/bin bash tests/gpu/kernelbench_import.sh "$OUT/kernelbench"
exit $status
