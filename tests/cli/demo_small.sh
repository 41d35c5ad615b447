# `make demo` end to end at the plumbing size (DEMO_SMALL=1: a tiny random model, 2 training and 2 held-out
# tasks, one update of each training stage), on the cpu: every stage runs and stamps itself, the summary and the
# reports appear; a rerun reuses every stamped stage; a stage that fails names itself and its log, and exits with
# its code; a bad DEMO_BACKEND or DEMO_MODEL is refused with 64.
. "$(dirname "$0")/lib.bash"
demo=$CA_SOURCE_DIR/scripts/demo.sh
out=$WORK/demo

run env DEMO_SMALL=1 DEMO_OUT="$out" DEMO_BACKEND=cpu bash "$demo"
expect_code 0
for stage in model tasks builtin split rft value rl trained eval; do
  [ -s "$out/.done/$stage" ] || fail "no stamp for stage $stage"
done
expect_stdout "== Summary"
expect_stdout "trained vs builtin: $out/compare.md"
for who in builtin trained; do
  [ -s "$out/eval-$who/report.md" ] && [ -s "$out/eval-$who/report.html" ] || fail "no report of $who"
  # the summary record of ca-eval run: 2 held-out tasks
  tail -1 "$out/eval-$who/results.jsonl" | grep -q '"tasks":2' || fail "$who: results' summary is not over 2 tasks"
done
[ "$(wc -l <"$out/heldout.jsonl")" -eq 2 ] || fail "held-out tasks: $(wc -l <"$out/heldout.jsonl"), expected 2"
[ -s "$out/compare.md" ] || fail "no compare.md"
[ -d "$out/rl/iter-1/ppo/checkpoint-000001" ] || fail "no PPO checkpoint"

# A rerun does nothing again: every stage says it was done before.
run env DEMO_SMALL=1 DEMO_OUT="$out" DEMO_BACKEND=cpu bash "$demo"
expect_code 0
[ "$(grep -c ': done before, reused' "$WORK/stdout")" -eq 9 ] || fail "a rerun ran stages again"

# A failing stage: the held-out split needs the builtin's episodes; without them the split fails, named, and the
# stages before it stay stamped.
rm "$out/.done/split" "$out/builtin.jsonl" && : >"$out/builtin.jsonl"
run env DEMO_SMALL=1 DEMO_OUT="$out" DEMO_BACKEND=cpu bash "$demo"
expect_code 1
expect_stderr "demo: error: stage 'split' failed with exit code 1; its log: $out/logs/split.log"
[ ! -e "$out/.done/split" ] || fail "a failed stage was stamped"

run env DEMO_OUT="$WORK/x" DEMO_BACKEND=tpu bash "$demo"
expect_code 64
expect_stderr "DEMO_BACKEND=tpu"
run env DEMO_OUT="$WORK/y" DEMO_BACKEND=cpu DEMO_MODEL=gpt5 bash "$demo"
expect_code 64
expect_stderr "demo: error: stage 'model' failed with exit code 64"
grep -qF "DEMO_MODEL=gpt5" "$WORK/y/logs/model.log" || fail "the model stage's log does not name DEMO_MODEL=gpt5"
exit $((failures > 0))
