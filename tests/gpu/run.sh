#!/usr/bin/env bash
# Builds the project on the GPU machine against its own torch and runs every
# GPU test, writing logs under $OUT. Carry .debs (Debian packages for the
# header-only and test dependencies the GPU machine lacks), made here with:
#   mkdir -p .debs && (cd .debs && apt-get download libcli11-dev nlohmann-json3-dev libgtest-dev)
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/build-gpu/out}
mkdir -p "$OUT"
status=0
step() {  # step NAME COMMAND...: runs a step, logs it, remembers a failure
  local name=$1; shift
  echo "== $name" | tee -a "$OUT/summary.txt"
  if "$@" >"$OUT/$name.log" 2>&1; then echo "   ok" | tee -a "$OUT/summary.txt"
  else echo "   FAILED (see $name.log)" | tee -a "$OUT/summary.txt"; tail -20 "$OUT/$name.log"; status=1; fi
}

deps=/tmp/ca-debs
mkdir -p "$deps"
for f in .debs/*.deb; do [ -e "$f" ] && dpkg -x "$f" "$deps"; done
torch_prefix=$(python3 -c 'import torch.utils; print(torch.utils.cmake_prefix_path)')
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$OUT/gpu.txt" 2>&1
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' >> "$OUT/gpu.txt" 2>&1

step configure cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTORCH_CUDA_ARCH_LIST=9.0 \
  -DCMAKE_PREFIX_PATH="$deps/usr;$deps/usr/lib/x86_64-linux-gnu/cmake;$torch_prefix"
step build cmake --build build-gpu -j "$(nproc)"
step cpu_units ctest --test-dir build-gpu --output-on-failure -j 8
step cuda_interpreter env CA_TEST_DEVICE=cuda build-gpu/bin/ca_torch_tests --gtest_filter='Programs/*'
step ops_summary build-gpu/bin/ca-crawl ops --summary
exit $status
