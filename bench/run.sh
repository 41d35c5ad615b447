#!/usr/bin/env bash
# The environment's benchmarks (issue 3, item 8), on one backend:
#   1. per-candidate cost of build + verify + profile, with cached baselines and a cold candidate build cache: one
#      candidate per verify | profile (tools start each time), and a batch of BATCH (default 8) through one
#      `ca-verify -j BATCH_JOBS (default 4) | ca-profile`;
#   2. repeatability: one candidate profiled 5 times, the spread of its medians (each profile's rounds' medians too,
#      from its --samples, to tell a profile shifted as a whole from scattered slow calls);
#   3. eager from the C++ interpreter (ca-profile) against PyTorch eager (bench/eager_torch.py), same method.
# Usage: bench/run.sh cpu|cuda [OUT_DIR]. Writes OUT_DIR/results.md (and the raw records) and prints it.
# CA_BIN defaults to build/bin (build-gpu/bin for cuda), CA_PYTHON to .venv/bin/python, else python3;
# CA_CPU_ALLOCATOR to CA_BIN/../lib/libca_cpu_allocator.so (cpu: eager_torch.py allocates through it, as ca-profile);
# BENCH_PROFILE_FLAGS go to every ca-profile (e.g. --no-compile, when the compiled baseline is not the question).
set -uo pipefail
backend=${1:?usage: bench/run.sh cpu|cuda [OUT_DIR]}
root=$(cd "$(dirname "$0")/.." && pwd)
out=${2:-$root/build/bench-$backend}
mkdir -p "$out"
if [ "$backend" = cuda ]; then
  bin=${CA_BIN:-$root/build-gpu/bin}; tasks=$root/bench/tasks.jsonl; ext=cu; arch=(--cuda-arch sm_90)
  pairs="l1_relu:relu_rand__correct l2_gemm_leaky_relu:linear_leaky_relu__cublas"
else
  bin=${CA_BIN:-$root/build/bin}; tasks=$root/bench/tasks_cpu.jsonl; ext=cpp; arch=()
  pairs="l1_relu:relu_rand__correct l2_gemm_leaky_relu:linear_leaky_relu__fast"
fi
read -r -a extra <<<"${BENCH_PROFILE_FLAGS:-}"
python=${CA_PYTHON:-$root/.venv/bin/python}
[ -x "$python" ] || python=python3
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
# Compiled baselines are shared across runs; candidate builds are not, so every timed run below builds cold.
compiled=${CA_COMPILED_CACHE:-$HOME/.cache/cuda-agent/compiled}
mkdir -p "$compiled"
fresh_cache() { rm -rf "$scratch/cache"; mkdir -p "$scratch/cache"; ln -s "$compiled" "$scratch/cache/compiled"; }

: >"$out/candidates.jsonl"
for pair in $pairs; do
  task=${pair%%:*} source=${pair#*:}
  python3 - "$root/examples/candidates/$backend/$source.$ext" "bench/$task" "$backend" >>"$out/candidates.jsonl" <<'PY'
import json, sys
path, task, backend = sys.argv[1:]
name = path.rsplit("/", 1)[1]
print(json.dumps({"kind": "candidate", "id": f"{task}/{name}", "task_id": task, "backend": backend,
                  "files": {f"kernels/{name}": open(path).read()}}))
PY
done

pipeline() {  # pipeline CANDIDATE_LINE OUT: build + verify + profile one candidate, prints wall seconds
  local start end
  start=$(date +%s.%N)
  "$bin/ca-verify" --tasks "$tasks" "${arch[@]}" <<<"$1" 2>>"$out/stderr.log" |
    "$bin/ca-profile" --tasks "$tasks" "${arch[@]}" "${extra[@]}" --samples >"$2" 2>>"$out/stderr.log"
  end=$(date +%s.%N)
  python3 -c "print(round($end - $start, 3))"
}

# Warm-up: compiles (or finds) the baselines; its cost is reported apart.
fresh_cache
export CA_CACHE_DIR=$scratch/cache
warm_start=$(date +%s)
"$bin/ca-profile" --tasks "$tasks" "${arch[@]}" "${extra[@]}" --rounds 1 "$out/candidates.jsonl" >"$out/warmup.jsonl" 2>>"$out/stderr.log"
warm_seconds=$(($(date +%s) - warm_start))

: >"$out/costs.txt"; : >"$out/repeat.jsonl"; : >"$out/batch.txt"; : >"$out/batch.jsonl"
while read -r line; do
  id=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["id"])' "$line")
  for run in 1 2 3; do
    fresh_cache
    echo "$id $(pipeline "$line" "$scratch/one.jsonl")" >>"$out/costs.txt"
    cat "$scratch/one.jsonl" >>"$out/repeat.jsonl"
  done
  for run in 4 5; do  # two more profiles of the same (now built) candidate, for five medians
    "$bin/ca-profile" --tasks "$tasks" "${arch[@]}" "${extra[@]}" --samples <<<"$line" >>"$out/repeat.jsonl" 2>>"$out/stderr.log"
  done
  # Steady state, as a batch evaluation runs: BATCH copies through one `ca-verify -j BATCH_JOBS | ca-profile`, so the
  # tools start once and builds and trials overlap the profiles (which hold the device alone). Each copy's source
  # differs by a comment, so each builds cold.
  python3 - "$line" "${BATCH:-8}" >"$scratch/batch.jsonl" <<'PY'
import json, sys
record, copies = json.loads(sys.argv[1]), int(sys.argv[2])
for i in range(copies):
    copy = dict(record, id=f"{record['id']}#{i}")
    copy["files"] = {name: text + f"\n// batch copy {i}\n" for name, text in record["files"].items()}
    print(json.dumps(copy))
PY
  fresh_cache
  start=$(date +%s.%N)
  "$bin/ca-verify" -j "${BATCH_JOBS:-4}" --tasks "$tasks" "${arch[@]}" "$scratch/batch.jsonl" 2>>"$out/stderr.log" |
    "$bin/ca-profile" --tasks "$tasks" "${arch[@]}" "${extra[@]}" >"$scratch/batch_out.jsonl" 2>>"$out/stderr.log"
  end=$(date +%s.%N)
  cat "$scratch/batch_out.jsonl" >>"$out/batch.jsonl"
  echo "$id $(python3 -c 'import json,sys; print(sum(json.loads(l).get("profile", {}).get("ok", False) for l in open(sys.argv[1])))' "$scratch/batch_out.jsonl") ${BATCH:-8} $(python3 -c "print(round($end - $start, 3))")" >>"$out/batch.txt"
done <"$out/candidates.jsonl"

export CA_CPU_ALLOCATOR=${CA_CPU_ALLOCATOR:-$bin/../lib/libca_cpu_allocator.so}
# PyTorch eager in ca-profile's TF32 mode: the one BENCH_PROFILE_FLAGS names, else both take the default (pytorch).
tf32=()
for ((i = 0; i + 1 < ${#extra[@]}; i++)); do [[ ${extra[i]} == --tf32 ]] && tf32=(--tf32 "${extra[i + 1]}"); done
"$python" "$root/bench/eager_torch.py" "$tasks" --device "$backend" "${tf32[@]}" >"$out/eager_torch.jsonl" 2>>"$out/stderr.log"

python3 - "$out" "$backend" "$warm_seconds" <<'PY' | tee "$out/results.md"
import json, statistics, sys
out, backend, warm = sys.argv[1], sys.argv[2], sys.argv[3]
costs = {}
for line in open(f"{out}/costs.txt"):
    cid, seconds = line.split()
    costs.setdefault(cid, []).append(float(seconds))
profiles = {}
for line in open(f"{out}/repeat.jsonl"):
    r = json.loads(line)
    profiles.setdefault(r["id"], []).append(r["profile"])
torch_eager = {json.loads(l)["id"]: json.loads(l)["eager_us"] for l in open(f"{out}/eager_torch.jsonl")}
device = next(iter(profiles.values()))[0].get("device", backend)
print(f"## {backend}: {device}\n")
print(f"Baselines compiled or found in the warm-up run: {warm} s.\n")
print("| candidate | build+verify+profile s (median of 3, cold build) | candidate us | eager us | compile us | spread of 5 medians | C++ eager us | PyTorch eager us | C++/PyTorch |")
print("|---|---|---|---|---|---|---|---|---|")
for cid, runs in costs.items():
    ps = [p for p in profiles[cid] if p.get("ok")]
    if len(ps) < 5:
        print(f"| {cid} | {statistics.median(runs):.2f} | profile failed: {[p.get('message') for p in profiles[cid] if not p.get('ok')][:1]} |")
        continue
    cand = [p["times_us"]["candidate"] for p in ps]
    eager = [p["times_us"]["eager"] for p in ps]
    comp = [p["times_us"]["compile"] for p in ps if p["times_us"]["compile"] is not None]
    spread = (max(cand) - min(cand)) / statistics.median(cand)
    task = cid.rsplit("/", 1)[0]
    cpp, py = statistics.median(eager), torch_eager[task]
    comp_text = f"{statistics.median(comp):.1f}" if comp else "n/a"
    print(f"| {cid} | {statistics.median(runs):.2f} | {statistics.median(cand):.1f} | {cpp:.1f} | {comp_text} | "
          f"{100 * spread:.2f}% | {cpp:.1f} | {py:.1f} | {cpp / py:.3f} |")

batch = {}
for line in open(f"{out}/batch.txt"):
    cid, ok, copies, seconds = line.split()
    batch[cid] = (int(ok), int(copies), float(seconds))
print("\n| candidate | batch: copies profiled ok | batch s | s per candidate (steady state) |")
print("|---|---|---|---|")
for cid, (ok, copies, seconds) in batch.items():
    print(f"| {cid} | {ok} of {copies} | {seconds:.2f} | {seconds / copies:.2f} |")

# Where a profile's time goes (its wall_s), median over the five profiles, with the timed calls per method.
phases = ["build", "compiled_load", "lease_wait", "runner", "runner_exit", "eager", "compile", "check"]
print("\n| candidate | calls per method | " + " | ".join(f"{p} s" for p in phases) + " |")
print("|---|---|" + "---|" * len(phases))
for cid, ps in profiles.items():
    ps = [p for p in ps if p.get("wall_s") and p.get("count")]
    if not ps:
        continue
    calls = statistics.median(p["count"]["candidate"] for p in ps)
    cells = [f"{statistics.median(p['wall_s'].get(name, 0) for p in ps):.2f}" for name in phases]
    print(f"| {cid} | {calls:.0f} | " + " | ".join(cells) + " |")
# cuda: of the runner phase, the runner's own start-up (its device, then loading the library), and whether both sides
# page-locked the output region (a pageable one stages every copy).
starts = {cid: [p["runner"] for p in ps if p.get("runner")] for cid, ps in profiles.items()}
if any(starts.values()):
    print("\n| candidate | runner device s | runner load s | region (runner) | region (harness) |")
    print("|---|---|---|---|---|")
    for cid, rs in starts.items():
        if not rs:
            continue
        med = lambda key: f"{statistics.median(r.get(key, 0) for r in rs):.3f}"
        regions = [sorted({r.get(side, "?") for r in rs}) for side in ("region", "harness_region")]
        print(f"| {cid} | {med('device_s')} | {med('load_s')} | {'; '.join(regions[0])} | {'; '.join(regions[1])} |")

# Each of the five profiles: the candidate's and eager's median per round (us), from samples_us.
print("\n| candidate | profile | candidate: round medians us | eager: round medians us |")
print("|---|---|---|---|")
for cid, ps in profiles.items():
    for i, p in enumerate(ps, 1):
        samples = p.get("samples_us")
        if not samples:
            continue
        cells = [" ".join(f"{statistics.median(r):.1f}" for r in samples[m] if r) for m in ("candidate", "eager")]
        print(f"| {cid} | {i} | {cells[0]} | {cells[1]} |")
PY
