# Shared helpers for the end-to-end tool tests; each test sources this file.
# CTest sets CA_BIN (the built tools) and CA_SOURCE_DIR.
set -uo pipefail
: "${CA_BIN:?set by ctest}" "${CA_SOURCE_DIR:?set by ctest}"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
failures=0

# run CMD...: runs a command, keeping its stdout, stderr and exit code.
run() {
  "$@" >"$WORK/stdout" 2>"$WORK/stderr"
  code=$?
}
fail() { echo "FAIL: $*" >&2; echo "--- stderr:" >&2; head -5 "$WORK/stderr" >&2; failures=$((failures + 1)); }
expect_code() { [ "$code" -eq "$1" ] || fail "exit code $code, expected $1"; }
expect_stderr() { grep -qF -- "$1" "$WORK/stderr" || fail "stderr lacks: $1"; }
expect_stdout() { grep -qF -- "$1" "$WORK/stdout" || fail "stdout lacks: $1"; }
expect_stderr_empty() { [ ! -s "$WORK/stderr" ] || fail "stderr not empty"; }
stdout_lines() { wc -l <"$WORK/stdout"; }
# The python that has torch: the project's venv, else the system's.
torch_python() {
  if [ -x "$CA_SOURCE_DIR/.venv/bin/python" ]; then echo "$CA_SOURCE_DIR/.venv/bin/python"; else echo python3; fi
}
finish() {
  [ "$failures" -eq 0 ] || { echo "$failures check(s) failed" >&2; exit 1; }
  echo ok
}
