#!/usr/bin/env bash
# The dataset pipeline on a GPU (issue 4): pipelines/Makefile with ca-filter on cuda and its 1-100 ms window, tasks
# sized by ca-synth for the H200, and the KernelBench import (scale 16) as the contamination reference (made on the
# GPU machine unless KB_REFERENCE names a copy made elsewhere: the programs are the same on any machine). Writes the
# stage files and report.txt (with kept tasks per hour of synth + filter) under OUT_DIR. Run by tests/gpu/run.sh.
# Usage: pipeline.sh OUT_DIR. PIPE_N (default 60) tasks are synthesized; CA_BIN defaults to build-gpu/bin and
# KB_BENCHMARKS to the KernelBench folder beside the checkout. make runs in pipelines/, so CA_BIN is made absolute.
set -uo pipefail
out=${1:?usage: pipeline.sh OUT_DIR}
root=$(cd "$(dirname "$0")/../.." && pwd)
make -C "$root/pipelines" N="${PIPE_N:-60}" DEVICE=cuda SYNTH_DEVICE=h200 TARGET_MS=2 OUT="$out" \
  BIN="$(cd "${CA_BIN:-$root/build-gpu/bin}" && pwd)" KERNELBENCH="${KB_BENCHMARKS:-$root/../shared/benchmarks/kernelbench}" \
  FILTER_FLAGS="-j ${PIPE_JOBS:-8}" ${KB_REFERENCE:+REFERENCE="$KB_REFERENCE"}
