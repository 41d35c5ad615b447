#!/usr/bin/env bash
# Runs tests repeatedly while busy loops load every core, to show they wait for states, not for times (a test that
# sleeps instead of waiting loses its race on a loaded machine). Stops at the first failure.
#   scripts/stress-tests.sh BUILD TIMES [ctest arguments, e.g. -R regex]
# BUILD is a configured build directory; one busy loop per core (nproc) runs until the tests end.
set -euo pipefail
build=${1:?usage: stress-tests.sh BUILD TIMES [ctest arguments]}
times=${2:?usage: stress-tests.sh BUILD TIMES [ctest arguments]}
shift 2
loops=()
trap 'kill "${loops[@]}" 2>/dev/null || true' EXIT
for _ in $(seq "$(nproc)"); do
  (while :; do :; done) &
  loops+=($!)
done
echo "stress-tests: ${#loops[@]} busy loops; each test up to $times times" >&2
start=$SECONDS
ctest --test-dir "$build" --output-on-failure --repeat "until-fail:$times" "$@"
echo "stress-tests: every test passed $times times under load in $((SECONDS - start)) s" >&2
