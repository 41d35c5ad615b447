#!/usr/bin/env bash
# Imports KernelBench level 1 and 2 and checks every imported task against the original problem in eager PyTorch
# (bridge/check_import.py): the CPU numbers in the README at --scale 16, and, through
# tests/gpu/kernelbench_import.sh, the full-size check on the GPU.
#
# Usage: scripts/kernelbench_check.sh OUT_DIR [SCALE (default 16)] [PROBLEM_GLOB (default '*')]
#
# Problems (KB_BENCHMARKS/level1 and level2, default ../shared/benchmarks/kernelbench beside the checkout) go in
# batches of KB_BATCH (default 0: all in one), KB_PARALLEL batches at a time (default 1). A batch is one
# `ca-crawl kernelbench --digests` (each task run on KB_DEVICE, cpu or cuda, default cpu, writing only digests of
# its inputs and outputs) and one `check_import.py --digests` (the same inputs drawn through libca_tensors.so, the
# original Model run on them, its outputs digested the same way): equal digests are "exact", and no tensor is
# written anywhere. Then, one at a time, problems run again alone: one whose digests differed ("inexact") with
# --dump as well, so that its values decide (exact, close or differs); one that ran out of memory (a CUDA OOM from
# sharing the GPU with the other batches) or lost its verdict to a crash (not to a usage error), as before. KB_DUMP=1 is the old path:
# every task dumped (--dump) and its values compared.
#
# OUT_DIR gets check.txt (a line per task as it finishes, "VERDICT ID [DETAIL] (SECONDS s)", a second one for a
# task run again, which counts; then a summary per level, "level N: imported a of b, equal c (d exact)", and the
# tasks not imported or not equal), tasks.jsonl (the record that counts per problem, written at the end),
# problems.txt ("LEVEL ID" per problem), import.log (what ca-crawl and check_import.py print on standard error, and
# each batch's times) and work/ (per batch: problem links, weights, digests, dumps; KB_WORK puts it elsewhere, e.g.
# /dev/shm, and KB_KEEP=0 deletes each batch's once checked, leaving tasks.jsonl's weight paths dangling).
# Needs CA_BIN (default build/bin) with ca-crawl and ../lib/libca_tensors.so (or CA_TENSORS_LIB), and CA_PYTHON
# (default .venv/bin/python). Prints the time taken and the summary; exit 0 when every problem imported and is equal.
set -uo pipefail
out=${1:?usage: kernelbench_check.sh OUT_DIR [SCALE] [PROBLEM_GLOB]}
scale=${2:-16}
glob=${3:-*}
root=$(cd "$(dirname "$0")/.." && pwd)
CA_BIN=$(cd "${CA_BIN:-$root/build/bin}" && pwd) || exit 1
export CA_PYTHON=${CA_PYTHON:-$root/.venv/bin/python}
export CA_TENSORS_LIB=${CA_TENSORS_LIB:-$CA_BIN/../lib/libca_tensors.so}
benchmarks=${KB_BENCHMARKS:-$root/../shared/benchmarks/kernelbench}
device=${KB_DEVICE:-cpu}
parallel=${KB_PARALLEL:-1}
mkdir -p "$out" && out=$(cd "$out" && pwd) || exit 1
work=${KB_WORK:-$out/work}
mkdir -p "$work" && work=$(cd "$work" && pwd) || exit 1
rm -rf "$work"/[br][0-9]* "$work/retry.txt" "$work/records.txt"
: >"$out/check.txt"; : >"$out/import.log"; : >"$out/problems.txt"

problems=()
for level in level1 level2; do
  for problem in "$benchmarks/$level"/$glob.py; do
    [ -e "$problem" ] || continue
    problems+=("$problem")
    echo "${level#level} kernelbench-$level-$(basename "$problem" .py)" >>"$out/problems.txt"
  done
done
[ "${#problems[@]}" -gt 0 ] || { echo "no problems match $benchmarks/level{1,2}/$glob.py" >&2; exit 1; }
batch=${KB_BATCH:-0}
[ "$batch" -gt 0 ] || batch=${#problems[@]}
mode=digests
[ "${KB_DUMP:-0}" = 1 ] && mode=dump
[ "$mode" = dump ] || [ -f "$CA_TENSORS_LIB" ] || { echo "no $CA_TENSORS_LIB (build target ca_tensors)" >&2; exit 1; }

# run_batch NAME MODE ALONE PROBLEM...: imports and checks the problems in one ca-crawl and one check process.
# MODE: digests, dump or both (digests, with the dump deciding where they differ). ALONE (yes/no): whether this
# is the final run of these problems; one that is not queues in work/retry.txt what must run again alone.
run_batch() {
  local name=$1 mode=$2 alone=$3; shift 3
  local dir=$work/$name start=$SECONDS
  mkdir -p "$dir"
  for problem in "$@"; do
    mkdir -p "$dir/$(basename "$(dirname "$problem")")"
    ln -sf "$problem" "$dir/$(basename "$(dirname "$problem")")/"
  done
  local crawl=() check=()
  case $mode in
    digests) crawl=(--digests "$dir/digests.jsonl"); check=(--digests "$dir/digests.jsonl") ;;
    dump) crawl=(--dump "$dir/dump"); check=("$dir/dump" --device "$device") ;;
    both) crawl=(--digests "$dir/digests.jsonl" --dump "$dir/dump"); check=("$dir/dump" --digests "$dir/digests.jsonl") ;;
  esac
  "$CA_BIN/ca-crawl" kernelbench "$dir"/level* --scale "$scale" --device "$device" --params-dir "$dir/params" \
    "${crawl[@]}" -o "$dir/tasks.jsonl" </dev/null 2>>"$out/import.log"
  local crawl_code=$? imported=$SECONDS
  # Kept beside the batch's folder, which KB_KEEP=0 deletes; listed in the order batches finish, the order in
  # which a problem's later record replaces its earlier one.
  [ -f "$dir/tasks.jsonl" ] && cp "$dir/tasks.jsonl" "$work/$name.jsonl" && echo "$work/$name.jsonl" >>"$work/records.txt"
  if [ -f "$dir/tasks.jsonl" ]; then
    "$CA_PYTHON" "$root/bridge/check_import.py" "$dir/tasks.jsonl" "${check[@]}" </dev/null 2>>"$out/import.log" |
      grep --line-buffered -v -e '^level ' -e '^not imported or not equal:' | tee -a "$out/check.txt" >"$dir/verdicts.txt"
  fi
  echo "batch $name ($# problems, $mode): import $((imported - start)) s (exit $crawl_code), check $((SECONDS - imported)) s" >>"$out/import.log"
  local problem id line verdict
  for problem in "$@"; do
    id=kernelbench-$(basename "$(dirname "$problem")")-$(basename "$problem" .py)
    line=$(awk -v id="$id" '$2 == id' "$dir/verdicts.txt" 2>/dev/null | tail -1)
    verdict=${line%% *}
    if [ "$verdict" = inexact ] && [ "$mode" = digests ]; then
      if [ "$alone" = yes ]; then run_batch "${name}d" both yes "$problem"; else echo "both $problem" >>"$work/retry.txt"; fi
    elif [ "$alone" = no ] && { { [ -z "$verdict" ] && [ "$crawl_code" -ne 64 ]; } ||
                                 grep -qiE '^(error|import_error) .*(out of memory|ALLOC_FAILED)' <<<"$line"; }; then
      echo "$mode $problem" >>"$work/retry.txt"
    elif [ -z "$verdict" ]; then
      echo "error    $id no verdict: ca-crawl exit $crawl_code, see import.log" >>"$out/check.txt"
    fi
  done
  [ "${KB_KEEP:-1}" = 1 ] || rm -rf "$dir"
}

start=$SECONDS
count=0
for ((i = 0; i < ${#problems[@]}; i += batch)); do
  while [ "$(jobs -rp | wc -l)" -ge "$parallel" ]; do wait -n; done
  run_batch "$(printf 'b%03d' "$count")" "$mode" no "${problems[@]:i:batch}" &
  count=$((count + 1))
done
wait
first_pass=$((SECONDS - start))
retries=()
[ -f "$work/retry.txt" ] && mapfile -t retries < <(awk '!seen[$0]++' "$work/retry.txt")
for ((i = 0; i < ${#retries[@]}; i++)); do
  run_batch "$(printf 'r%03d' "$i")" "${retries[i]%% *}" yes "${retries[i]#* }"
done
echo "checked ${#problems[@]} problems in $((SECONDS - start)) s: $count batches in $first_pass s, then ${#retries[@]} alone"
records=()
[ -f "$work/records.txt" ] && mapfile -t records <"$work/records.txt"
"$CA_PYTHON" "$root/bridge/check_import.py" --summarize "$out/check.txt" "${records[@]}" /dev/null \
  --problems "$out/problems.txt" --records-out "$out/tasks.jsonl" | tee -a "$out/check.txt"
