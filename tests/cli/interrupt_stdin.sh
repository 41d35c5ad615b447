# SIGINT while a tool waits for input on stdin ends it with 130 (interrupted), not 74: the read's EINTR is the
# interruption (util/jsonl's reader says so to every caller). One tool per reader: the record loop (ca-reward,
# ca-filter, ca-crawl tasks), side files read whole (ca-synth's op records), ca-sandbox create's and ca-rollout's
# task readers. The test waits until the tool is blocked in read(2) on fd 0, a state, not a time.
. "$(dirname "$0")/lib.bash"
case $(uname -m) in
  x86_64) read_syscall=0 ;;
  aarch64) read_syscall=63 ;;
  *) echo "skipped: the read syscall's number on $(uname -m) is not known here"; exit 0 ;;
esac
mkfifo "$WORK/in"
exec 3<>"$WORK/in"  # held open for writing, so a tool's read blocks instead of seeing end of input

# interrupted_while_reading NAME CMD...: starts CMD on the FIFO, waits until it reads fd 0, sends SIGINT, expects 130.
interrupted_while_reading() {
  local name=$1
  shift
  "$@" <"$WORK/in" >"$WORK/stdout" 2>"$WORK/stderr" &
  pid=$!
  until [ "$(cut -d' ' -f1,2 "/proc/$pid/syscall" 2>/dev/null)" = "$read_syscall 0x0" ]; do
    kill -0 "$pid" 2>/dev/null || { fail "$name exited before reading stdin"; return; }
  done
  kill -INT "$pid"
  wait "$pid"
  code=$?
  [ "$code" -eq 130 ] || fail "$name: exit code $code, expected 130"
  ! grep -q "Interrupted system call" "$WORK/stderr" || fail "$name: reported EINTR as an I/O error"
}

# The record read before the signal is written: the loop stops between records.
head -1 "$CA_SOURCE_DIR/examples/rewarded.jsonl" >&3
interrupted_while_reading ca-reward "$CA_BIN/ca-reward"
[ "$(stdout_lines)" -eq 1 ] || fail "ca-reward: the record read before the signal was not written"

interrupted_while_reading ca-filter "$CA_BIN/ca-filter" --no-compile
interrupted_while_reading "ca-crawl tasks" "$CA_BIN/ca-crawl" tasks
interrupted_while_reading ca-synth "$CA_BIN/ca-synth" -o "$WORK/synth.jsonl"
[ ! -e "$WORK/synth.jsonl" ] || fail "ca-synth: an interrupted run left its output"
interrupted_while_reading "ca-sandbox create" "$CA_BIN/ca-sandbox" create --dir "$WORK/workspaces" -
interrupted_while_reading ca-rollout "$CA_BIN/ca-rollout" --policy builtin -o "$WORK/trajectories.jsonl"
exec 3>&-
finish
