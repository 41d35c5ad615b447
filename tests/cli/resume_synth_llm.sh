#!/usr/bin/env bash
# ca-synth --llm keeps what its finished requests gave (util/journal.h): the task each made, or the failure it was
# counted as. A run killed with SIGKILL once its journal holds three of six requests (CA_JOURNAL_KILL_AFTER), resumed
# with --resume against an endpoint that answers a request the same whenever it is sent (the fake's --by-seed), writes
# the tasks and counts of an uninterrupted run: every request draws its prompt and seed from (--seed, its index), so
# the resume sends only the three it lacks, none twice; with --llm-jobs 2 too (the same tasks, in answer order).
source "$(dirname "$0")/lib.bash"
source "$(dirname "$0")/resume.bash"
python=$(torch_python)
serve_fake_llm fake_llm_server.py --by-seed --log "$WORK/asked"
echo '{"kind":"op","name":"aten::gelu","overload":"","schema":"aten::gelu(Tensor self, *, str approximate=\"none\") -> Tensor","category":"activation","usable":true}' >"$WORK/ops.jsonl"
synth=(env CA_PYTHON="$python" "$CA_BIN/ca-synth" --llm "$url" --model fake
  --prompts 6 --seed 2 --params-dir "$WORK/params" "$WORK/ops.jsonl")

run "${synth[@]}" -o "$WORK/full.jsonl"
expect_code 0
summary=$(grep -o '[0-9]* tasks from 6 requests.*' "$WORK/stderr" | sed 's/ in [0-9]* s$//')
# The seed is chosen so that the six requests give tasks and failures both.
[ "$(wc -l <"$WORK/full.jsonl")" -ge 2 ] || fail "--seed 2 gave fewer than 2 tasks: $summary"
case $summary in *"failed: none"*) fail "--seed 2 gave no failure: $summary" ;; esac

CA_JOURNAL_KILL_AFTER=3 "${synth[@]}" -o "$WORK/out.jsonl" 2>"$WORK/killed.err"
code=$?
[ "$code" -eq 137 ] || fail "the run was to be killed at its third request, exit $code: $(tail -2 "$WORK/killed.err")"
[ -e "$WORK/out.jsonl" ] && fail "a killed run left its output"

: >"$WORK/asked"
run "${synth[@]}" -o "$WORK/out.jsonl" --resume
expect_code 0
[ "$(wc -l <"$WORK/asked")" -eq 3 ] || fail "the resume sent $(wc -l <"$WORK/asked") requests, not the 3 it lacked"
expect_stderr "resuming: 3 finished records in $WORK/out.jsonl.journal"
expect_stderr "$summary"
cmp -s "$WORK/full.jsonl" "$WORK/out.jsonl" || fail "the resumed run wrote other tasks than an uninterrupted one"
[ -e "$WORK/out.jsonl.journal" ] && fail "a resumed run left its journal"

# Two requests in flight: the one cut short with the kill is asked again, the journaled ones are not; the tasks are
# those of an uninterrupted run, in the order their answers came.
run "${synth[@]}" --llm-jobs 2 -o "$WORK/full2.jsonl"
expect_code 0
CA_JOURNAL_KILL_AFTER=3 "${synth[@]}" --llm-jobs 2 -o "$WORK/out2.jsonl" 2>"$WORK/killed.err"
code=$?
[ "$code" -eq 137 ] || fail "the run was to be killed at its third request, exit $code: $(tail -2 "$WORK/killed.err")"
: >"$WORK/asked"
run "${synth[@]}" --llm-jobs 2 -o "$WORK/out2.jsonl" --resume
expect_code 0
[ "$(wc -l <"$WORK/asked")" -eq 3 ] || fail "the resume sent $(wc -l <"$WORK/asked") requests, not the 3 it lacked"
expect_stderr "$summary"
cmp -s <(sort "$WORK/full2.jsonl") <(sort "$WORK/out2.jsonl") || fail "the resumed run at --llm-jobs 2 wrote other tasks"
cmp -s <(sort "$WORK/full.jsonl") <(sort "$WORK/out2.jsonl") || fail "--llm-jobs 2 wrote other tasks than 1"
finish
