# Every tool has a man page that renders, documents every flag its --help
# lists (subcommands included), and whose EXAMPLES run.
. "$(dirname "$0")/lib.bash"

# Examples run in a scratch directory that sees the source tree's examples/.
mkdir -p "$WORK/cwd"
ln -s "$CA_SOURCE_DIR/examples" "$WORK/cwd/examples"
[ -d "$CA_SOURCE_DIR/.venv" ] && ln -s "$CA_SOURCE_DIR/.venv" "$WORK/cwd/.venv"

for tool_dir in "$CA_SOURCE_DIR"/tools/ca-*/; do
  tool=$(basename "$tool_dir")
  page=$CA_SOURCE_DIR/man/man1/$tool.1
  [ -f "$page" ] || { fail "$tool has no man page"; continue; }
  if command -v man >/dev/null; then
    man -l "$page" >"$WORK/rendered" 2>&1 || fail "$tool.1 does not render"
    for section in NAME SYNOPSIS DESCRIPTION OPTIONS "EXIT STATUS" EXAMPLES "SEE ALSO"; do
      grep -q "^$section" "$WORK/rendered" || fail "$tool.1 lacks $section"
    done
  fi
  subcommands=$("$CA_BIN/$tool" --help | sed -n '/^Subcommands:/,$p' | awk 'NR > 1 && NF { print $1 }')
  for sub in "" $subcommands; do
    "$CA_BIN/$tool" $sub --help | grep -oE -- '--[a-z][a-z-]*' | sort -u | while read -r flag; do
      grep -qF -- "$(echo "$flag" | sed 's/-/\\-/g')" "$page" || echo "$tool $sub $flag"
    done
  done >"$WORK/undocumented"
  [ ! -s "$WORK/undocumented" ] || fail "flags missing from man pages: $(tr '\n' ' ' <"$WORK/undocumented")"

  # Examples in an indented block (.RS ... .RE) need what a test machine lacks (a GPU, a server): shown, not run.
  sed -n '/^\.SH EXAMPLES/,/^\.SH SEE ALSO/p' "$page" | awk -v tool="$tool" '/^\.RS/ { held = 1 } /^\.RE/ { held = 0 }
    !held && index($0, tool) == 1' >"$WORK/examples"
  [ -s "$WORK/examples" ] || fail "$tool.1 has no examples"
  while read -r example; do
    case "$example" in *.venv*) [ -e "$WORK/cwd/.venv" ] || continue ;; esac
    (cd "$WORK/cwd" && PATH="$CA_BIN:$PATH" && set -o pipefail && eval "$example" >/dev/null 2>"$WORK/example_err") ||
      fail "$tool example failed: $example: $(head -2 "$WORK/example_err")"
  done <"$WORK/examples"
done
finish
