#!/usr/bin/env bash
# The KernelBench import at full size on CUDA: every problem of level 1 and 2 imported with `ca-crawl kernelbench
# --device cuda --digests` and checked against the original Model in eager PyTorch on the GPU
# (bridge/check_import.py --digests), through scripts/kernelbench_check.sh, which says how. Inputs are drawn on
# the GPU with the project's generator on both sides (ARCHITECTURE.md, "Seeded generation"), and outputs are
# compared by digests computed on the GPU, so no full-size tensor (1-13 GB a problem) is written; only a problem
# whose digests differ is imported again with --dump, to compare its values. KB_PARALLEL batches of KB_BATCH
# problems share the GPU; a problem that runs out of GPU memory beside the others runs again alone at the end.
#
# Usage: kernelbench_import.sh OUT_DIR. OUT_DIR gets check.txt (a verdict line per problem as it finishes, then
# "level N: imported a of b, equal c (d exact)" per level), tasks.jsonl (all records; their weights, in /dev/shm,
# are deleted with each batch) and import.log (ca-crawl's messages and each batch's times).
# KB_PROBLEMS (a glob, default '*') picks problems and KB_SCALE (default 1) shrinks them, for a quick run;
# KB_BENCHMARKS is the folder holding level1/ and level2/ (default ../shared/benchmarks/kernelbench, else
# shared/...). CA_BIN defaults to build-gpu/bin (its ../lib/libca_tensors.so is loaded by the check), CA_PYTHON
# to python3 (with CUDA torch and safetensors). KB_BATCH (default 8) and KB_PARALLEL (default 4) as in
# scripts/kernelbench_check.sh; KB_DUMP=1 is the old path (every task dumped to /dev/shm and its values compared).
set -uo pipefail
out=${1:?usage: kernelbench_import.sh OUT_DIR}
CA_SOURCE_DIR=${CA_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
export CA_BIN=${CA_BIN:-$CA_SOURCE_DIR/build-gpu/bin}
export CA_PYTHON=${CA_PYTHON:-python3}
benchmarks=${KB_BENCHMARKS:-}
for candidate in "$CA_SOURCE_DIR/../shared/benchmarks/kernelbench" "$CA_SOURCE_DIR/shared/benchmarks/kernelbench"; do
  [ -n "$benchmarks" ] || { [ -d "$candidate/level1" ] && benchmarks=$candidate; }
done
[ -n "$benchmarks" ] || { echo "no KernelBench problems found; set KB_BENCHMARKS" >&2; exit 1; }
scratch=$(mktemp -d /dev/shm/ca-kernelbench.XXXXXX 2>/dev/null || mktemp -d)
trap 'rm -rf "$scratch"' EXIT
# The bridge builds models on one thread; the check's torch gets an equal share of the cores per batch.
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(( $(nproc) / ${KB_PARALLEL:-4} > 0 ? $(nproc) / ${KB_PARALLEL:-4} : 1 ))}
KB_BENCHMARKS=$benchmarks KB_DEVICE=cuda KB_BATCH=${KB_BATCH:-8} KB_PARALLEL=${KB_PARALLEL:-4} KB_WORK=$scratch KB_KEEP=0 \
  bash "$CA_SOURCE_DIR/scripts/kernelbench_check.sh" "$out" "${KB_SCALE:-1}" "${KB_PROBLEMS:-*}"
