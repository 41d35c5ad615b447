#!/usr/bin/env bash
# A real model composes tasks (issue 22): starts the project's own OpenAI-compatible server (`ca-model serve`) on
# Qwen2.5-Coder-1.5B-Instruct (SmolLM2-135M-Instruct when Qwen is not set up; MODEL=DIR for another checkpoint),
# asks it through `ca-synth --llm` for PROMPTS tasks, each prompt 2-5 records drawn at even odds from the usable op
# records (ca-crawl ops --usable) and the module records of torch.nn and of transformers' attention, MLP, norm and
# embedding blocks (ca-crawl modules), imports the answers in the sandbox, stops the server, filters the tasks with
# ca-filter --device cpu, and prints prompts, answers, failures by kind, imported tasks, kept tasks, the acceptance
# rate and the tasks per hour of composer wall time.
#
#   bench/compose.sh [OUT_DIR]     (default: a temporary folder, removed at the end)
#
# Environment: PROMPTS (20), JOBS (requests in flight, 4), MAX_TOKENS (768), TEMPERATURE (0: greedy, which the server
# batches), TARGET_MS (2), SEED (0), MODEL, SERVE_DEVICE (ca-model serve's --device: cpu, or cuda on the H200),
# FILTER_DEVICE (ca-filter's --device, cpu), CA_BIN (build/bin), CA_PYTHON (the venv's python). Set-up:
# scripts/setup-models.sh qwen-coder (or the default smollm2). An empty tasks file is still filtered and reported.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${CA_BIN:-$root/build/bin}
py=${CA_PYTHON:-$root/.venv/bin/python}
cache=${CA_MODEL_CACHE:-$HOME/.cache/cuda-agent/models}
prompts=${PROMPTS:-20}
jobs=${JOBS:-4}
max_tokens=${MAX_TOKENS:-768}
temperature=${TEMPERATURE:-0}
target_ms=${TARGET_MS:-2}
seed=${SEED:-0}
serve_device=${SERVE_DEVICE:-cpu}
filter_device=${FILTER_DEVICE:-cpu}
die() { echo "compose: error: $*" >&2; exit "${2:-1}"; }

model=${MODEL:-}
if [ -z "$model" ]; then
  for name in Qwen2.5-Coder-1.5B-Instruct SmolLM2-135M-Instruct; do
    if [ -f "$cache/$name/model.safetensors" ]; then model=$cache/$name; break; fi
  done
fi
[ -n "$model" ] && [ -f "$model/config.json" ] || die "no checkpoint (run scripts/setup-models.sh qwen-coder)" 66
[ -x "$py" ] || die "$py not found: run 'make venv' first" 66

keep=${1:-}
out=${keep:-$(mktemp -d)}
mkdir -p "$out"
server=
cleanup() {
  if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
  [ -n "$keep" ] || rm -rf "$out"
}
trap cleanup EXIT

# The records a prompt draws from.
"$bin/ca-crawl" ops --usable -o "$out/ops.jsonl"
nn=$("$py" -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "nn", "modules"))')
transformers=$("$py" -c 'import os, transformers; print(os.path.join(os.path.dirname(transformers.__file__), "models"))') ||
  die "no transformers in $py (scripts/setup-models.sh python)" 69
"$bin/ca-crawl" modules "$nn" --origin torch.nn -o "$out/nn_modules.jsonl"
"$bin/ca-crawl" modules "$transformers" --origin transformers -o "$out/transformers_modules.jsonl"
# transformers' blocks, not its whole models and heads (role "other").
"$py" - "$out/nn_modules.jsonl" "$out/transformers_modules.jsonl" >"$out/modules.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    print(line, end="")
for line in open(sys.argv[2]):
    if json.loads(line)["role"] != "other":
        print(line, end="")
PY

# The server, started here and stopped when composing ends (or on any exit).
rm -f "$out/port"
"$bin/ca-model" serve -m "$model" --device "$serve_device" --port 0 --port-file "$out/port" --max-batch "$jobs" 2>"$out/serve.log" &
server=$!
until [ -s "$out/port" ]; do
  kill -0 "$server" 2>/dev/null || { cat "$out/serve.log" >&2; die "ca-model serve ended before listening"; }
  sleep 1  # a poll: what ends the loop is the state above
done
name=$(basename "$model")

start=$(date +%s.%N)
set +e
CA_PYTHON="$py" "$bin/ca-synth" --llm "http://127.0.0.1:$(cat "$out/port")/v1" --model "$name" \
  --modules "$out/modules.jsonl" --prompts "$prompts" --llm-jobs "$jobs" --max-tokens "$max_tokens" \
  --temperature "$temperature" --cost-model cpu --target-ms "$target_ms" --seed "$seed" --request-timeout 100000 \
  --params-dir "$out/params" -o "$out/tasks.jsonl" -v "$out/ops.jsonl" 2>"$out/synth.log"
synth_code=$?
set -e
compose_s=$("$py" -c "import sys, time; print(f'{time.time() - float(sys.argv[1]):.1f}')" "$start")
# SIGINT to ca-synth ends composing early: the requests in flight are aborted (counted as http) and, the output
# being written whole or not at all, its tasks are lost; the counts are still reported. The server would finish the
# abandoned generations before stopping on SIGTERM, so it gets SIGKILL then.
if [ "$synth_code" -eq 130 ]; then kill -KILL "$server"; else kill "$server"; fi
wait "$server" 2>/dev/null || true
server=
[ "$synth_code" -eq 0 ] || [ "$synth_code" -eq 130 ] || { cat "$out/synth.log" >&2; die "ca-synth exited $synth_code"; }
if [ "$synth_code" -eq 130 ]; then
  echo "compose: ca-synth interrupted: counts of the prompts sent so far; its tasks were not written" >&2
  : >"$out/tasks.jsonl"
fi

start=$(date +%s.%N)
set +e
"$bin/ca-filter" --device "$filter_device" -o "$out/kept.jsonl" --rejects "$out/rejects.jsonl" "$out/tasks.jsonl" 2>"$out/filter.log"
filter_code=$?
set -e
filter_s=$("$py" -c "import sys, time; print(f'{time.time() - float(sys.argv[1]):.1f}')" "$start")
[ "$filter_code" -eq 0 ] || { cat "$out/filter.log" >&2; die "ca-filter exited $filter_code"; }

"$py" - "$out" "$name" "$prompts" "$jobs" "$max_tokens" "$temperature" "$compose_s" "$filter_s" "$serve_device" <<'PY'
import collections, json, re, sys
out, name, prompts, jobs, max_tokens, temperature = sys.argv[1:7]
compose_s, filter_s, device = float(sys.argv[7]), float(sys.argv[8]), sys.argv[9]
synth = open(f"{out}/synth.log").read()
summary = re.search(r"(\d+) tasks from (\d+) requests \((\d+) answers\); failed: (.*) in \d+ s", synth)
tasks, requests, answers = (int(summary.group(i)) for i in (1, 2, 3))
failures = {} if summary.group(4) == "none" else {
    k: int(v) for k, v in (item.rsplit(" ", 1) for item in summary.group(4).split(", "))}
kept = sum(1 for _ in open(f"{out}/kept.jsonl"))
rejects = collections.Counter(json.loads(line)["reject"]["reason"] for line in open(f"{out}/rejects.jsonl"))
print(f"model {name} (ca-model serve, {device}), {jobs} requests in flight, max_tokens {max_tokens}, temperature {temperature}")
print(f"prompts:           {requests}")
print(f"answers:           {answers}")
print("failures by kind:  " + (", ".join(f"{k} {v}" for k, v in sorted(failures.items())) or "none"))
print(f"imported tasks:    {tasks}")
print(f"kept by ca-filter: {kept}" + (f" (rejected: {', '.join(f'{k} {v}' for k, v in sorted(rejects.items()))})"
                                      if rejects else ""))
print(f"acceptance:        {kept / requests:.1%} of prompts kept, {tasks / requests:.1%} imported"
      + (f", {kept / tasks:.1%} of imported kept" if tasks else ""))
print(f"composer wall:     {compose_s:.0f} s ({compose_s / requests:.0f} s a prompt); ca-filter {filter_s:.0f} s")
print(f"tasks per hour:    {tasks * 3600 / compose_s:.1f} imported, {kept * 3600 / compose_s:.1f} kept "
      f"(of composer wall time)")
PY
