#!/usr/bin/env bash
# Runs a sanitizer build's tests (make sanitize, make sanitize-thread, .ci/sanitize) with the sanitizers' options and
# this folder's suppressions, and fails on any sanitizer report, also one that a test did not notice (a test that
# expects its tool to fail would pass over a tool that a sanitizer stopped): every report goes to a file under
# BUILD/sanitize-reports/, and any file there fails the run.
#   tests/sanitize/run.sh address|thread BUILD [ctest arguments...]
#   tests/sanitize/run.sh --targets thread    the build targets of the ThreadSanitizer run
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

# ThreadSanitizer covers the threaded paths: the -j record loops (util/record_loop, util/slices: core_units and
# every CLI test of a record tool), the rollout's concurrent episodes (agent_units, cli_rollout_*), ca-model
# serve's batching worker (cli_model_serve), ca-eval's policy runs, ca-judge serve's request threads (a verify
# request beside a profile, and ca-rollout -j N's concurrent verifies through it).
thread_targets="ca_core_tests ca_agent_tests ca_eval_tests ca-rollout ca-sandbox ca-verify ca-profile ca-reward
  ca-runner ca-model ca-eval ca-filter ca-judge"
thread_tests='^(core_units|agent_units|eval_units|cli_rollout_replay_cpu|cli_rollout_scale_resume|cli_rollout_interrupt|cli_model_serve|cli_filter|cli_verify_cpu_examples|cli_judge_warm_failures|cli_judge_rollout_auto)$'

if [[ ${1:-} == --targets ]]; then
  echo $thread_targets
  exit 0
fi
kind=${1:?usage: run.sh address|thread BUILD [ctest args]}
build=$(cd "${2:?usage: run.sh address|thread BUILD [ctest args]}" && pwd)
shift 2
reports=$build/sanitize-reports
rm -rf "$reports"
mkdir -p "$reports"

case $kind in
address)
  # detect_leaks: LeakSanitizer at each process's exit, with lsan.supp for what LibTorch keeps until the end.
  # log_path: reports to files (checked below), not only to the stderr that a test may swallow.
  # allocator_may_return_null: an allocation beyond what the machine has fails as it does unsanitized (ENOMEM, which
  # LibTorch turns into a c10::Error), instead of ASan ending the process: tests/cli/record_exceptions.sh asks
  # LibTorch for 1 PiB to see a record's exception handled. ASan still logs a one-line warning for it, which the check
  # below lets through; anything else in the same file fails the run.
  export ASAN_OPTIONS="detect_leaks=1:log_path=$reports/asan:abort_on_error=0:exitcode=86:allocator_may_return_null=1:${CA_ASAN_OPTIONS:-}"
  export LSAN_OPTIONS="suppressions=$here/lsan.supp:print_suppressions=0"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:log_path=$reports/ubsan"
  args=()
  ;;
thread)
  # tsan.supp: races inside LibTorch's uninstrumented OpenMP loops and atomics (why in the file).
  export TSAN_OPTIONS="suppressions=$here/tsan.supp:log_path=$reports/tsan:exitcode=86:second_deadlock_stack=1:${CA_TSAN_OPTIONS:-}"
  args=(-R "$thread_tests")
  ;;
*)
  echo "run.sh: error: unknown sanitizer '$kind' (address or thread)" >&2
  exit 64
  ;;
esac

start=$(date +%s)
status=0
ctest --test-dir "$build" --output-on-failure "${args[@]}" "$@" || status=$?
echo "run.sh: $kind: ctest exit $status after $(($(date +%s) - start)) s"
shopt -s nullglob
for f in "$reports"/*; do
  if ! grep -qv '^==[0-9]*==WARNING: AddressSanitizer failed to allocate 0x[0-9a-f]* bytes$' "$f"; then
    echo "run.sh: an allocation refused as asked ($(basename "$f")): $(head -c 200 "$f")"
    rm "$f"
  fi
done
found=("$reports"/*)
if ((${#found[@]})); then
  echo "run.sh: error: ${#found[@]} sanitizer report(s) in $reports:" >&2
  for f in "${found[@]}"; do
    echo "== $f" >&2
    head -n 60 "$f" >&2
  done
  exit 1
fi
exit $status
