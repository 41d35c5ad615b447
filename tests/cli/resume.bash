# Helpers for the --resume tests (resume_*.sh): a run killed with SIGKILL once its journal (util/journal.h) holds a
# given number of finished records, by state: the records are fed on a pipe, so the run cannot get past them.
# Source after lib.bash.

# journal_entries OUT: the finished records OUT.journal holds (its lines less the header).
journal_entries() {
  local lines
  lines=$(cat "$1.journal" 2>/dev/null | wc -l)
  echo $((lines > 0 ? lines - 1 : 0))
}

# killed_run K INPUT OUT CMD...: runs CMD (which writes -o OUT and reads records on stdin), feeds it the first K
# records of INPUT, waits until OUT.journal holds K finished records, then kills it with SIGKILL. Fails when CMD ends
# first.
killed_run() {
  local k=$1 input=$2 out=$3 pid
  shift 3
  rm -f "$WORK/feed"
  mkfifo "$WORK/feed"
  "$@" <"$WORK/feed" 2>"$WORK/killed.err" &
  pid=$!
  exec 8>"$WORK/feed"
  head -n "$k" "$input" >&8
  until [ "$(journal_entries "$out")" -ge "$k" ]; do
    kill -0 "$pid" 2>/dev/null || { fail "the run ended before its journal held $k records: $(tail -2 "$WORK/killed.err")"; break; }
    sleep 0.05  # a poll: what ends the loop is the journal's state
  done
  kill -9 "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  exec 8>&-
  [ -e "$out" ] && fail "a killed run left its output $out"
}

# same_records A B: the records of A and B are the same, in the same order, but for the fields that measure time.
same_records() {
  python3 - "$1" "$2" <<'PY' || fail "$1 and $2 differ"
import json, re, sys
# A profile's ci (its medians' intervals), count (calls sized by a first timing) and flush_bytes (sized by timing
# the flush on the CPU) are measured too.
TIMED = re.compile(r"(_ms|_us|_s|ms|us|seconds|time|times|samples|speedup|spread|gbps|fraction|calls)$|^(ci|count|flush_bytes)$")
def strip(value):
    if isinstance(value, dict):
        return {k: strip(v) for k, v in value.items() if not TIMED.search(k)}
    if isinstance(value, list):
        return [strip(v) for v in value]
    return value
def diff(x, y, at=""):
    if isinstance(x, dict) and isinstance(y, dict):
        return [d for k in sorted(set(x) | set(y)) for d in diff(x.get(k), y.get(k), f"{at}.{k}")]
    return [] if x == y else [f"{at}: {json.dumps(x)[:120]} / {json.dumps(y)[:120]}"]
a, b = ([strip(json.loads(line)) for line in open(path) if line.strip()] for path in sys.argv[1:3])
ids = lambda records: [r.get("id", r.get("task_id")) for r in records]
assert a and len(a) == len(b), f"{len(a)} records, {len(b)} records: {ids(a)} {ids(b)}"
for i, (x, y) in enumerate(zip(a, b)):
    assert x == y, f"record {i + 1} differs at {diff(x, y)}"
PY
}
