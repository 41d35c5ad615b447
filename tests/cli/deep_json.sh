# JSON nested far deeper than any record needs (200,000 levels) is a bad record with a clear message in every
# tool that reads records, never a stack overflow; the records around it go through.
. "$(dirname "$0")/lib.bash"
python3 - "$WORK" <<'PY'
import sys
deep = '{"kind":"task","id":"deep","x":' + "[" * 200000 + "]" * 200000 + "}"
with open(sys.argv[1] + "/deep.jsonl", "w") as f:
    f.write(deep + "\n")
PY
good=$CA_SOURCE_DIR/examples/tasks.jsonl
for tool in "ca-reward" "ca-crawl tasks" "ca-filter --no-compile --min-ms 0" "ca-sandbox create --dir $WORK/ws"; do
  # shellcheck disable=SC2086 # the tool's words
  run $CA_BIN/$tool "$WORK/deep.jsonl"
  [ "$code" -eq 1 ] || [ "$code" -eq 65 ] || fail "$tool: exit $code, expected 1 or 65"
  expect_stderr "deep.jsonl:1: JSON nested deeper than 512 levels"
done
# A good record after the deep one is still processed.
cat "$WORK/deep.jsonl" <(head -1 "$good") >"$WORK/mixed.jsonl"
run "$CA_BIN/ca-crawl" tasks "$WORK/mixed.jsonl"
expect_code 1
[ "$(stdout_lines)" -eq 1 ] || fail "the good record after the deep one was not written"
finish
