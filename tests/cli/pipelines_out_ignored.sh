# `make -C pipelines` with its default OUT writes only where git ignores (issue 24 item 7: a few hundred files
# appeared in the checkout). Every path the dry run's recipes write under the checkout must be ignored; an OUT
# outside pipelines/out/ is caught (the check can fail).
. "$(dirname "$0")/lib.bash"
git -C "$CA_SOURCE_DIR" rev-parse --git-dir >/dev/null 2>&1 || { echo "skipped: not a git checkout"; exit 77; }
# unignored [MAKE ARGS...]: the checkout paths that the dry run writes and git does not ignore, one a line.
unignored() {
  make -n -C "$CA_SOURCE_DIR/pipelines" "$@" >"$WORK/dry" 2>&1 || { echo "make -n failed"; return; }
  # Paths after -o, --rejects, --params-dir, mkdir -p, tee and redirections, relative to pipelines/.
  grep -oE '((-o|--rejects|--params-dir|mkdir -p|tee) +|[0-9]?> *)[^ ;|)&]+' "$WORK/dry" |
    sed -E 's/^((-o|--rejects|--params-dir|mkdir -p|tee) +|[0-9]?> *)//' | grep -v '^/' | sort -u >"$WORK/written"
  [ -s "$WORK/written" ] || { echo "no written paths found"; return; }
  while read -r path; do
    git -C "$CA_SOURCE_DIR" check-ignore -q "pipelines/$path" || echo "pipelines/$path"
  done <"$WORK/written"
}
left=$(unignored)
[ -z "$left" ] || fail "written by make -C pipelines and not ignored: $left"
grep -q 'out/cpu/crawl.log' "$WORK/written" || fail "the stage logs were not among the written paths"
[ -n "$(unignored OUT=ca-test-not-ignored)" ] || fail "an OUT outside pipelines/out/ went unnoticed"
finish
