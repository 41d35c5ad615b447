# ca-report over five hand-made kept tasks and three KernelBench-like references: every number of summary.json
# checked against a count by hand (below), the files of the folder, stdin, and the failure paths with their exit codes.
. "$(dirname "$0")/lib.bash"

# task ID EAGER_MS OP...: a task record whose nodes chain OP... over one input.
task() {
  local id=$1 ms=$2 nodes="" last=x i=0
  shift 2
  for op in "$@"; do
    nodes+="${nodes:+,}{\"op\":\"$op\",\"args\":[\"%$last\"],\"out\":[\"t$i\"]}"
    last=t$i
    i=$((i + 1))
  done
  local meta='{}'
  [ "$ms" = - ] || meta="{\"eager_ms\":$ms}"
  echo "{\"kind\":\"task\",\"id\":\"$id\",\"program\":{\"inputs\":[{\"name\":\"x\",\"dtype\":\"float32\",\"shape\":[4,8],\"init\":\"rand\"}],\"params\":[],\"nodes\":[$nodes],\"outputs\":[\"$last\"]},\"meta\":$meta}"
}
# Ops that count: clone is a copy, so d has two. Op counts 1,2,2,2,4: {1:1, 2:3, 4:1}, mean 2.2.
# Eager 0.5 2 50 200 5 ms: median 5; below 1 ms: 1, in 1-100: 3, above: 1.
# Categories: activation 9 (relu x5, tanh x2, sigmoid x2), elementwise 1 (mul), softmax 1; 11 ops.
{
  task a 0.5 aten::relu
  task b 2 aten::relu aten::tanh
  task c 50 aten::sigmoid aten::mul.Scalar
  task d 200 aten::relu aten::clone aten::softmax.int
  task e 5 aten::tanh aten::relu aten::sigmoid aten::relu
} >"$WORK/kept.jsonl"
# Level 1: relu, softmax; level 2: relu-tanh. Best op-multiset Jaccard per task:
#   level 1: a 1, b 1/2, c 0, d 1/2, e 1/4 (relu 1 in common of tanh+relu*2+sigmoid = 4): median 1/2, at 1: 1, >= 1/2: 3
#   level 2: a 1/2, b 1, c 0, d 1/3, e 2/4: median 1/2, at 1: 1, >= 1/2: 3
{
  task kb1 - aten::relu | sed 's/"kind":"task"/"kind":"task","level":1/'
  task kb2 - aten::softmax.int | sed 's/"kind":"task"/"kind":"task","level":1/'
  echo '{"kind":"import_error","id":"kb-bad","error":"not exportable"}'
  task kb3 - aten::relu aten::tanh | sed 's/"kind":"task"/"kind":"task","level":2/'
} >"$WORK/kb.jsonl"

run "$CA_BIN/ca-report" "$WORK/kept.jsonl" --reference "$WORK/kb.jsonl" -o "$WORK/out"
expect_code 0
expect_stderr "ca-report: note: 5 tasks, 2.20 ops per task; eager median 5 ms, 3 of 5 timed in 1-100 ms"
for file in summary.json tasks.jsonl report.md op_counts.svg categories.svg eager_ms.svg similarity.svg; do
  [ -s "$WORK/out/$file" ] || fail "missing $file"
done
python3 - "$WORK/out" <<'EOF' || fail "summary.json differs from the hand count"
import json, sys
out = sys.argv[1]
s = json.load(open(out + "/summary.json"))
def eq(name, got, want):
    if abs(got - want) > 1e-9 if isinstance(want, float) else got != want:
        sys.exit(f"{name}: got {got}, want {want}")
eq("tasks", s["tasks"], 5)
eq("op_count.tasks", s["op_count"]["tasks"], {"1": 1, "2": 3, "4": 1})
eq("op_count.mean", s["op_count"]["mean"], 2.2)
cats = {c["category"]: c["ops"] for c in s["categories"]["categories"]}
eq("categories", cats, {"activation": 9, "elementwise": 1, "softmax": 1})
eq("categories.ops", s["categories"]["ops"], 11)
e = s["runtime"]["eager_ms"]
eq("eager.count", e["count"], 5)
eq("eager.median", e["median"], 5.0)
eq("eager.window", [e["below_window"], e["in_window"], e["above_window"]], [1, 3, 1])
kb = s["kernelbench"]
eq("references", kb["references"], 3)
for level, problems in (("1", 2), ("2", 1)):
    l = kb["levels"][level]
    eq(f"level {level} problems", l["problems"], problems)
    eq(f"level {level} median", l["median"], 0.5)
    eq(f"level {level} at 1", l["at_1"], 1)
    eq(f"level {level} >= 0.5", l["at_least_0.5"], 3)
    eq(f"level {level} matched", l["problems_matched_at_1"], 1)
rows = [json.loads(line) for line in open(out + "/tasks.jsonl")]
eq("rows", [r["id"] for r in rows], ["a", "b", "c", "d", "e"])
eq("e level 1", rows[4]["kernelbench"]["nearest"]["level1"], {"id": "kb1", "value": 0.25})
eq("d level 2", rows[3]["kernelbench"]["nearest"]["level2"]["value"], 1 / 3)
eq("c level 1 (no op in common)", rows[2]["kernelbench"]["nearest"]["level1"], {"id": None, "value": 0.0})
EOF
# The window's two edges are drawn on the runtime figure.
[ "$(grep -o 'class="marker"' "$WORK/out/eager_ms.svg" | wc -l)" -eq 2 ] || fail "eager_ms.svg: expected 2 markers"

# stdin, another window, no references: no similarity figure, kernelbench null.
run "$CA_BIN/ca-report" -o "$WORK/stdin" --min-ms 0.1 --max-ms 10 <"$WORK/kept.jsonl"
expect_code 0
expect_stderr "3 of 5 timed in 0.1-10 ms"
[ ! -e "$WORK/stdin/similarity.svg" ] || fail "similarity.svg without references"
python3 -c 'import json,sys; sys.exit(json.load(open(sys.argv[1]))["kernelbench"] is not None)' \
  "$WORK/stdin/summary.json" || fail "kernelbench should be null without references"

# A bad record ends the run with its file:line, and nothing is written.
{ head -2 "$WORK/kept.jsonl"; echo '{"kind":"op","name":"aten::relu"}'; } >"$WORK/bad.jsonl"
run "$CA_BIN/ca-report" "$WORK/bad.jsonl" -o "$WORK/bad"
expect_code 65
expect_stderr "ca-report: error: $WORK/bad.jsonl:3: expected kind \"task\""
[ ! -e "$WORK/bad" ] || fail "a refused run wrote its folder"
{ head -1 "$WORK/kept.jsonl"; echo '{"kind":'; } >"$WORK/broken.jsonl"
run "$CA_BIN/ca-report" "$WORK/broken.jsonl" -o "$WORK/bad"
expect_code 65
expect_stderr "$WORK/broken.jsonl:2:"
sed 's/"eager_ms":2}/"eager_ms":"slow"}/' "$WORK/kept.jsonl" >"$WORK/slow.jsonl"
run "$CA_BIN/ca-report" "$WORK/slow.jsonl" -o "$WORK/bad"
expect_code 65
expect_stderr "$WORK/slow.jsonl:2: meta.eager_ms"

# Missing files (66), bad command lines (64), a folder that cannot be made (74).
run "$CA_BIN/ca-report" "$WORK/none.jsonl" -o "$WORK/bad"
expect_code 66
expect_stderr "none.jsonl"
run "$CA_BIN/ca-report" "$WORK/kept.jsonl" --reference "$WORK/none.jsonl" -o "$WORK/bad"
expect_code 66
run "$CA_BIN/ca-report" "$WORK/kept.jsonl"
expect_code 64
run "$CA_BIN/ca-report" "$WORK/kept.jsonl" -o "$WORK/bad" --min-ms 100 --max-ms 1
expect_code 64
expect_stderr "--min-ms must be below --max-ms"
: >"$WORK/file"
run "$CA_BIN/ca-report" "$WORK/kept.jsonl" -o "$WORK/file/sub"
expect_code 74
finish
