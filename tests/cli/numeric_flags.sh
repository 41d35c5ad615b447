# Every numeric flag is range-checked (common/util/cli.h): NaN, infinities, zero or negative values where they mean
# nothing, absurd values and negative counts exit 64 with one error line (and the --help hint), never a 309-digit
# bound.
. "$(dirname "$0")/lib.bash"

# bad TOOL ARGS...: exit 64, exactly one "error:" line naming the flag, no line longer than 200 characters (a size's unit list is
# the longest).
bad() {
  run "$CA_BIN/$1" "${@:2}" </dev/null
  [ "$code" -eq 64 ] || { fail "$* exited $code, expected 64"; return; }
  [ "$(grep -c 'error:' "$WORK/stderr")" -eq 1 ] || fail "$*: not one error line: $(cat "$WORK/stderr")"
  [ "$(awk 'length > 200' "$WORK/stderr" | wc -l)" -eq 0 ] || fail "$*: a line over 200 characters"
  grep -q "error: .*--[a-z]" "$WORK/stderr" || fail "$*: the error names no flag: $(cat "$WORK/stderr")"
}

for tool in ca-verify ca-profile ca-filter; do
  for value in nan inf -1 1e300; do bad $tool --atol $value; done
  for value in nan -0.1 1 2; do bad $tool --rtol $value; done
  for value in nan 0 -1 1e300 -inf; do bad $tool --timeout=$value; done
done
for flag in -j --jobs; do for value in 0 -1 1e300 nan; do bad ca-reward $flag $value; done; done
for value in -1 nan; do bad ca-reward --seed $value; done
for value in 0 -1 nan 1e300; do bad ca-verify --trials $value; done
for flag in --rounds --max-calls --threads; do for value in 0 -1 nan; do bad ca-profile $flag $value; done; done
for flag in --min-ms --peak-gbps; do for value in -1 nan 1e300; do bad ca-profile $flag $value; done; done
bad ca-profile --peak-gbps 0
for flag in --min-ms --max-ms; do for value in -1 nan 1e300; do bad ca-filter $flag $value; done; done
for flag in --calls --threads; do for value in 0 -1 nan; do bad ca-filter $flag $value; done; done
for flag in --max-similarity --rounding-share; do for value in -0.1 1.5 nan; do bad ca-filter $flag $value; done; done
for flag in --eager-threshold --compile-threshold; do for value in 0 -1 nan inf 1e300; do bad ca-reward $flag $value; done; done
for value in 0 -1 nan 1e300; do bad ca-synth -n $value; done
for flag in --target-ms --max-elements --request-timeout --import-timeout; do
  for value in 0 -1 nan 1e300; do bad ca-synth $flag $value; done
done
for value in -1 nan 11; do bad ca-synth --temperature $value; done
for flag in --wall --cpu --memory --processes --file-size --disk; do
  for value in 0 -1 nan 1e300; do bad ca-sandbox exec $flag $value "$WORK" -- true; done
done
for value in -1 nan 1e300; do bad ca-sandbox exec --device-memory $value "$WORK" -- true; done  # 0: no share
for value in 0 -1 nan; do bad ca-crawl kernelbench --scale $value "$WORK"; done
# The messages themselves: short numbers, the value as given.
run "$CA_BIN/ca-verify" --timeout 1e300
expect_stderr "ca-verify: error: --timeout: 1e300 is not in (0, 1e6]"
run "$CA_BIN/ca-verify" --trials -1
expect_stderr "ca-verify: error: --trials: -1 is not in [1, 1e6]"
run "$CA_BIN/ca-verify" --atol nan
expect_stderr "ca-verify: error: --atol: nan is not a finite number"
run "$CA_BIN/ca-filter" --seed -1
expect_stderr "ca-filter: error: --seed: -1 is negative; it must be at least 0"

# Good values still pass the checks (they fail later, on the missing input).
run "$CA_BIN/ca-verify" --atol 0 --rtol 0.5 --timeout 1e6 --trials 3 "$WORK/missing.jsonl"
expect_code 66
run "$CA_BIN/ca-sandbox" exec --memory 1G --file-size 64M --wall 0.5 "$WORK/none" -- true
[ "$code" -ne 64 ] || fail "good sandbox limits refused: $(cat "$WORK/stderr")"
finish
