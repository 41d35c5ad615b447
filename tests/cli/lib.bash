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
# The last tool run's stderr follows, where the check ran one.
fail() {
  echo "FAIL: $*" >&2
  if [ -s "$WORK/stderr" ]; then echo "--- stderr:" >&2; head -5 "$WORK/stderr" >&2; fi
  failures=$((failures + 1))
}
expect_code() { [ "$code" -eq "$1" ] || fail "exit code $code, expected $1"; }
expect_stderr() { grep -qF -- "$1" "$WORK/stderr" || fail "stderr lacks: $1"; }
expect_stdout() { grep -qF -- "$1" "$WORK/stdout" || fail "stdout lacks: $1"; }
expect_stderr_empty() { [ ! -s "$WORK/stderr" ] || fail "stderr not empty"; }
stdout_lines() { wc -l <"$WORK/stdout"; }
# The python that has torch: the project's venv, else the system's.
torch_python() {
  if [ -x "$CA_SOURCE_DIR/.venv/bin/python" ]; then echo "$CA_SOURCE_DIR/.venv/bin/python"; else echo python3; fi
}
# The cpu device's lease (timing/lease.h) as a test drives it, by states, never by times. hold_lease: this shell
# holds the lease exclusively on fd 9, as a profile does (run tools with 9>&-). release_lease gives it back.
# waiting_for_lease PID: returns once process PID waits for the lease, that is holds its gate while this shell holds
# the lease (/proc/locks); fails when PID ends first. Needs CA_LOCK_DIR.
hold_lease() {
  exec 9>"$CA_LOCK_DIR/cuda-agent-cpu.lock"
  flock 9
  : >>"$CA_LOCK_DIR/cuda-agent-cpu.gate.lock"
}
release_lease() {
  flock -u 9
  exec 9>&-
}
waiting_for_lease() {
  local inode
  inode=$(stat -c %i "$CA_LOCK_DIR/cuda-agent-cpu.gate.lock") || return 1
  until grep -qE "FLOCK +ADVISORY +WRITE +$1 +[0-9a-f]+:[0-9a-f]+:$inode " /proc/locks; do
    kill -0 "$1" 2>/dev/null || return 1
    sleep 0.05  # a poll: what ends the loop is the state above
  done
}
# serve_fake_llm SCRIPT [ARGS...]: starts a fake OpenAI-compatible endpoint (tests/cli/SCRIPT under the python that
# has torch), waits until it listens (it prints its port: a state, not a time), and sets `server` (its pid, killed
# when the test exits) and `url` (its API base).
serve_fake_llm() {
  "$(torch_python)" "$CA_SOURCE_DIR/tests/cli/$1" "${@:2}" >"$WORK/port" &
  server=$!
  trap 'kill "$server" 2>/dev/null; rm -rf "$WORK"' EXIT
  until [ -s "$WORK/port" ]; do
    kill -0 "$server" 2>/dev/null || { echo "FAIL: the fake LLM server ended before listening" >&2; exit 1; }
    sleep 0.1  # a poll: what ends the loop is the state above
  done
  url=http://127.0.0.1:$(cat "$WORK/port")/v1
}
finish() {
  [ "$failures" -eq 0 ] || { echo "$failures check(s) failed" >&2; exit 1; }
  echo ok
}
