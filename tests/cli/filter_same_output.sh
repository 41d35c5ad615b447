# ca-filter refuses -o and --rejects that name one file (the same path spelled two ways, a symlinked folder, a
# symlink to an existing file): each output is committed by a rename, so one would silently replace the other.
# Exit 64 before anything is read, and the file is left as it was. Different paths both appear.
. "$(dirname "$0")/lib.bash"
mkdir "$WORK/real"
ln -s real "$WORK/link"
echo '{"old":true}' >"$WORK/real/existing.jsonl"
ln -s existing.jsonl "$WORK/real/alias.jsonl"
cd "$WORK/real" || exit 1
for pair in "out.jsonl out.jsonl" "out.jsonl ./out.jsonl" "$WORK/real/out.jsonl $WORK/link/out.jsonl" \
  "existing.jsonl alias.jsonl" "../real/existing.jsonl existing.jsonl"; do
  read -r kept rejects <<<"$pair"
  # /dev/null as input: a run that got past the check would exit 0 and write both.
  run "$CA_BIN/ca-filter" -o "$kept" --rejects "$rejects" /dev/null
  expect_code 64
  expect_stderr "ca-filter: error: --rejects '$rejects' is the same file as -o '$kept'"
  [ "$(wc -l <"$WORK/stderr")" -le 2 ] || fail "$pair: more than a usage line and a hint"
done
[ ! -e out.jsonl ] || fail "a refused run created its output"
[ "$(cat existing.jsonl)" = '{"old":true}' ] || fail "a refused run changed the existing file"
[ -L alias.jsonl ] || fail "the symlink was replaced"

run "$CA_BIN/ca-filter" -o out.jsonl --rejects rejects.jsonl /dev/null
expect_code 0
[ -f out.jsonl ] && [ -f rejects.jsonl ] || fail "different paths: both outputs should appear"
# Written in place, not replaced: two writers of /dev/null lose nothing.
run "$CA_BIN/ca-filter" -o /dev/null --rejects /dev/null /dev/null
expect_code 0
finish
