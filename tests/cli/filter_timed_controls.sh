# ca-filter judges the negative controls on the distribution ca-profile times (the task's own inputs), not only where
# verification's signed trials would catch them: a candidate tells the two apart by its inputs and answers with the
# control only on the timed ones (examples/filter/timed_controls.jsonl; docs/EXPLOITS.md, "controls on the timed
# distribution"). Each cheatable task is rejected with the control that passes; its honest twin is kept.
. "$(dirname "$0")/lib.bash"
tasks=$CA_SOURCE_DIR/examples/filter/timed_controls.jsonl

reject_of() { grep "\"id\":\"$1\"" "$WORK/rejects.jsonl" | grep -o '"reject":{"reason":"[a-z-]*","detail":"[^"]*"'; }

run "$CA_BIN/ca-filter" --min-ms 0 --rejects "$WORK/rejects.jsonl" -o "$WORK/kept.jsonl" "$tasks"
expect_code 0
expect_stderr "kept 2 of 4; rejected: control-mean 1, control-passthrough 1"
# A row mean of rand inputs is answered by the constant 0.5.
[ "$(reject_of timed/row_mean_rand)" = '"reject":{"reason":"control-mean","detail":"output 0: a constant equal to its mean on another seed (0.4998) passes verification on the timed inputs (atol 0.01, rtol 0.01)"' ] ||
  fail "row_mean_rand: $(reject_of timed/row_mean_rand)"
# relu(x) + 1e-5 x@x is answered by the input itself, skipping the matmul.
reject_of timed/relu_plus_small_matmul | grep -qF '"reason":"control-passthrough","detail":"output 0: input '"'"'x'"'"' passed through passes verification on the timed inputs' ||
  fail "relu_plus_small_matmul: $(reject_of timed/relu_plus_small_matmul)"
for id in timed/row_mean_randn timed/gelu_plus_matmul; do
  grep -q "\"id\":\"$id\"" "$WORK/kept.jsonl" || fail "honest twin $id not kept: $(reject_of "$id")"
done

finish
