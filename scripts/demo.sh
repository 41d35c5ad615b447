#!/usr/bin/env bash
# `make demo`: runs every pipeline stage that exists today on built-in
# defaults, on the CPU, and says plainly which stages are still to come.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=build/bin
out=build/demo
mkdir -p "$out"
py=.venv/bin/python
modules_dir=$($py -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "nn", "modules"))')

echo "== ca-crawl ops: every operator in LibTorch's dispatcher -> $out/ops.jsonl"
$bin/ca-crawl ops -o "$out/ops.jsonl"
echo "   $(wc -l <"$out/ops.jsonl") op records; usable in tasks, per category:"
$bin/ca-crawl ops --summary | sed 's/^/   /'

echo
echo "== ca-crawl modules: nn.Module classes of $modules_dir -> $out/modules.jsonl"
$bin/ca-crawl modules "$modules_dir" --origin torch.nn -o "$out/modules.jsonl"
echo "   $(wc -l <"$out/modules.jsonl") module records, e.g.: $(grep -o '"name":"[A-Za-z0-9]*"' "$out/modules.jsonl" | head -8 | cut -d'"' -f4 | tr '\n' ' ')"

echo
echo "== ca-crawl tasks: check examples/tasks.jsonl through the reference interpreter -> $out/tasks.jsonl"
$bin/ca-crawl tasks examples/tasks.jsonl -o "$out/tasks.jsonl"
$py - "$out/tasks.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    m = r["meta"]
    print(f"   {r['id']:28} {' '.join(m['ops']):55} -> {m['output_shapes'][0]['shape']}  {m['fingerprint'][:19]}")
PY

echo
echo "== ca-crawl ops --usable | ca-synth | ca-filter: 50 fused CPU tasks, filtered by the paper's rubric -> $out/kept.jsonl"
$bin/ca-crawl ops --usable -o "$out/usable.jsonl"
$bin/ca-synth -n 50 --seed 1 --cost-model cpu --target-ms 0.05 -o "$out/synth.jsonl" "$out/usable.jsonl" 2>"$out/synth.log"
$bin/ca-filter --rejects "$out/rejects.jsonl" -o "$out/kept.jsonl" "$out/synth.jsonl" 2>"$out/filter.log" || true
echo "   $(wc -l <"$out/synth.jsonl") composed, $(wc -l <"$out/kept.jsonl") kept; $(tail -1 "$out/filter.log")"

echo
echo "== ca-verify | ca-profile | ca-reward: the relu candidates of examples/candidates/cpu (the first profile compiles"
echo "   the task's torch.compile baseline, about a minute; it is cached) -> $out/rewarded.jsonl"
dir=examples/candidates/cpu
grep '"example/relu_rand"' "$dir/candidates.jsonl" | $bin/ca-verify --tasks "$dir/tasks.jsonl" --timeout 10 |
  $bin/ca-profile --tasks "$dir/tasks.jsonl" --min-ms 20 | $bin/ca-reward -o "$out/rewarded.jsonl"
$py - "$out/rewarded.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    p = r.get("profile", {})
    times = p.get("times_us") or {}
    speed = "  ".join(f"{k} {v:.0f} us" for k, v in times.items() if isinstance(v, (int, float)))
    print(f"   {r['id']:36} reward {r['reward']['value']:>2}  {speed or r['reward']['reason'][:70]}")
PY

echo
echo "== ca-eval run --policy builtin: the built-in policy (ca-rollout) writes, verifies and profiles kernels for 8 kept"
echo "   tasks, then the harness judges them; metrics and an HTML report -> $out/eval/"
head -8 "$out/kept.jsonl" >"$out/suite.jsonl"
mkdir -p "$out/eval"
$bin/ca-eval -j 2 run --suite "$out/suite.jsonl" --policy builtin --no-compile -o "$out/eval/results.jsonl" \
  2>"$out/eval/eval.log" || true
$bin/ca-eval report "$out/eval/results.jsonl" -o "$out/eval" 2>>"$out/eval/eval.log"
grep -E '^\| (metric|tasks|passed|pass rate|fast_1.05 vs_eager|geomean speedup vs eager, passing tasks|mean reward) ' \
  "$out/eval/report.md" | sed 's/^/   /'
echo "   report: $out/eval/report.html"

cat <<'TXT'

== Still to come (open issues; not run by this demo):
   ca-train warmup / value / ppo        RL training beyond rejection fine-tuning, and a rollout of the trained model
TXT
