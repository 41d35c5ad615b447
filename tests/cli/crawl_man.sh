# The man page renders, documents every flag that --help lists, and its
# examples run.
. "$(dirname "$0")/lib.bash"
page=$CA_SOURCE_DIR/man/man1/ca-crawl.1
if command -v man >/dev/null; then
  run man -l "$page"
  expect_code 0; expect_stdout "EXIT STATUS"
fi
for sub in "" ops modules tasks; do
  "$CA_BIN/ca-crawl" $sub --help | grep -oE -- '--[a-z][a-z-]*' | sort -u | while read -r flag; do
    grep -qF -- "$(echo "$flag" | sed 's/-/\\-/g')" "$page" || echo "$flag"
  done
done >"$WORK/undocumented"
[ ! -s "$WORK/undocumented" ] || fail "flags missing from the man page: $(tr '\n' ' ' <"$WORK/undocumented")"

# EXAMPLES, run from the source tree with the built tool first on PATH.
cd "$CA_SOURCE_DIR"
sed -n '/^\.SH EXAMPLES/,/^\.SH SEE ALSO/p' "$page" | grep '^ca-crawl' >"$WORK/examples"
[ -s "$WORK/examples" ] || fail "no examples found"
while read -r example; do
  example=${example//-o usable-ops.jsonl/-o $WORK/usable-ops.jsonl}
  (PATH="$CA_BIN:$PATH"; set -o pipefail; eval "$example" >/dev/null 2>"$WORK/example_err") || fail "example failed: $example"
done <"$WORK/examples"
finish
