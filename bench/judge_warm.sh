#!/usr/bin/env bash
# Cold against warm judging (issue 24 item 5), on one backend: an agent's verify + profile of a changed kernel in a
# workspace of each bench task, ROUNDS (default 5) times each way, interleaved so that both see the same machine.
#   cold: `ca-verify --workspace W --backend B` then `ca-profile --workspace W --backend B` (what ca-rollout's tools
#         run without a judge: two fresh processes);
#   warm: the same two requests to one `ca-judge serve` over its socket (what ca-rollout --judge sends: no process).
# Every round edits the kernel (a new comment line), so every verify builds it anew, as after an agent's edit. A
# warm-up (untimed) first compiles or finds each task's torch.compile baseline and has the judge load it. Each round
# also profiles the candidate as a record on both sides, for where the time goes (its wall_s phases, and what the
# request costs outside them).
# Usage: bench/judge_warm.sh cpu|cuda [OUT_DIR]; CA_BIN (build/bin; build-gpu/bin for cuda), ROUNDS (5),
# BENCH_PROFILE_FLAGS (to both sides' profiles; cpu default --min-ms 20, cuda none). Writes OUT_DIR/results.md and
# prints it.
set -uo pipefail
backend=${1:?usage: bench/judge_warm.sh cpu|cuda [OUT_DIR]}
root=$(cd "$(dirname "$0")/.." && pwd)
out=${2:-$root/build/bench-judge-$backend}
mkdir -p "$out"
if [ "$backend" = cuda ]; then
  bin=${CA_BIN:-$root/build-gpu/bin}; tasks=$root/bench/tasks.jsonl; ext=cu
  pairs="l1_relu:relu_rand__correct l2_gemm_leaky_relu:linear_leaky_relu__cublas"
else
  bin=${CA_BIN:-$root/build/bin}; tasks=$root/bench/tasks_cpu.jsonl; ext=cpp
  pairs="l1_relu:relu_rand__correct l2_gemm_leaky_relu:linear_leaky_relu__fast"
fi
scratch=$(mktemp -d)
judge=
cleanup() {
  [ -n "$judge" ] && kill -TERM "$judge" 2>/dev/null && wait "$judge" 2>/dev/null
  rm -rf "$scratch"
}
trap cleanup EXIT
# Compiled baselines are shared with other runs (cached); candidate builds are not.
compiled=${CA_COMPILED_CACHE:-$HOME/.cache/cuda-agent/compiled}
mkdir -p "$compiled" "$scratch/cache"
ln -s "$compiled" "$scratch/cache/compiled"
export CA_CACHE_DIR=$scratch/cache

"$bin/ca-sandbox" create --backend "$backend" --dir "$scratch/ws" "$tasks" -q >/dev/null || exit 1
: >"$out/workspaces.txt"
for pair in $pairs; do
  task=${pair%%:*} source=${pair#*:}
  ws=$scratch/ws/bench_$task
  cp "$root/examples/candidates/$backend/$source.$ext" "$ws/kernels/kernel.$ext"
  echo "$task $ws $ws/kernels/kernel.$ext" >>"$out/workspaces.txt"
done

# cpu: 20 ms a method unless BENCH_PROFILE_FLAGS says otherwise, so that a round is seconds on a 2-core machine (the
# default 100 ms, with a flush before each call, makes a relu profile 10-30 s there and hides what is compared).
default_flags=""
[ "$backend" = cpu ] && default_flags="--min-ms 20"
read -r -a extra <<<"${BENCH_PROFILE_FLAGS-$default_flags}"
serve_flags=()  # the judge takes the profile flags but --no-compile, which goes with each request
for flag in "${extra[@]}"; do [ "$flag" = --no-compile ] || serve_flags+=("$flag"); done
"$bin/ca-judge" serve --socket "$scratch/judge.sock" "${serve_flags[@]}" >"$scratch/serve_out" 2>"$out/serve.log" &
judge=$!
until grep -q "listening on" "$scratch/serve_out" 2>/dev/null || ! kill -0 "$judge" 2>/dev/null; do sleep 0.1; done
grep -q "listening on" "$scratch/serve_out" || { echo "ca-judge serve did not start: $(head -3 "$out/serve.log")" >&2; exit 1; }

python3 - "$bin" "$backend" "$scratch/judge.sock" "$out" "$tasks" "${ROUNDS:-5}" "${extra[@]}" <<'PY' | tee "$out/results.md"
import json, os, socket, statistics, subprocess, sys, time
bin_dir, backend, sock, out, tasks_path, rounds, extra = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], \
    sys.argv[5], int(sys.argv[6]), sys.argv[7:]
workspaces = [line.split() for line in open(f"{out}/workspaces.txt")]
compile_flag = "--no-compile" not in extra

def ask(request):
    s = socket.socket(socket.AF_UNIX)
    s.connect(sock)
    s.sendall((json.dumps(request) + "\n").encode())
    data = b""
    while not data.endswith(b"\n"):
        chunk = s.recv(1 << 20)
        if not chunk:
            raise SystemExit("the judge closed the connection without an answer")
        data += chunk
    s.close()
    return json.loads(data)

def timed(action):
    start = time.perf_counter()
    result = action()
    return time.perf_counter() - start, result

def cold(tool, ws):
    argv = [f"{bin_dir}/ca-{tool}", "--workspace", ws, "--backend", backend]
    argv += extra if tool == "profile" else []
    ran = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    return ran.returncode, ran.stdout

def warm(tool, ws):
    answer = ask({"tool": tool, "workspace": ws, "backend": backend, "compile": compile_flag})
    return answer["exit"], answer["stdout"]

def edit(kernel, text):
    with open(kernel, "a") as f:
        f.write(f"\n// {text}\n")

# Warm-up, not timed: compiles (or finds) each task's torch.compile baseline, and has the judge load it, so that
# neither side's first round pays for a compilation.
for task, ws, kernel in workspaces:
    cold("profile", ws)
    warm("profile", ws)

def profile_record(side, task, ws, kernel):
    """The same candidate's profile in record mode, for its wall_s phases: (seconds, profile)."""
    task_record = json.load(open(f"{ws}/task.json"))
    files = {f"kernels/{os.path.basename(kernel)}": open(kernel).read()}
    record = {"kind": "candidate", "id": f"{task}/{side}", "task": task_record, "backend": backend, "files": files}
    if side == "cold":
        seconds, ran = timed(lambda: subprocess.run([f"{bin_dir}/ca-profile"] + extra, input=json.dumps(record),
                                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True))
        return seconds, json.loads(ran.stdout)["profile"]
    seconds, answer = timed(lambda: ask({"tool": "profile", "record": record, "compile": compile_flag}))
    return seconds, answer["record"]["profile"]

rows = {}  # task -> side -> what -> [seconds]
phases = ["build", "compiled_load", "setup", "lease_wait", "runner", "eager", "compile", "check", "runner_exit"]
for r in range(rounds):
    for task, ws, kernel in workspaces:
        for side, call in (("cold", cold), ("warm", warm)):
            at = rows.setdefault(task, {}).setdefault(side, {})
            edit(kernel, f"round {r}, {side}")
            for tool in ("verify", "profile"):
                seconds, (code, text) = timed(lambda: call(tool, ws))
                if code != 0:
                    raise SystemExit(f"{side} {tool} of {task} exited {code}: {text}")
                at.setdefault(tool, []).append(seconds)
            edit(kernel, f"round {r}, {side}, record")
            seconds, profile = profile_record(side, task, ws, kernel)
            wall = profile.get("wall_s", {})
            at.setdefault("record", []).append(seconds)
            at.setdefault("outside", []).append(seconds - sum(wall.values()))
            for p in phases:
                at.setdefault(p, []).append(wall.get(p, 0.0))

flags = " ".join(extra) if extra else "none"
print(f"## {backend}: cold against warm verify + profile of a changed kernel (medians of {rounds}; profile flags: "
      f"{flags})\n")
print("| task | cold verify s | warm verify s | cold profile s | warm profile s | cold v+p s | warm v+p s | "
      "saved s | cold / warm |")
print("|---|---|---|---|---|---|---|---|---|")
med = lambda values: statistics.median(values)
for task, sides in rows.items():
    m = {side: {what: med(v) for what, v in whats.items()} for side, whats in sides.items()}
    total = {side: m[side]["verify"] + m[side]["profile"] for side in m}
    print(f"| {task} | {m['cold']['verify']:.2f} | {m['warm']['verify']:.2f} | {m['cold']['profile']:.2f} | "
          f"{m['warm']['profile']:.2f} | {total['cold']:.2f} | {total['warm']:.2f} | "
          f"{total['cold'] - total['warm']:.2f} | {total['cold'] / total['warm']:.2f} |")

# Where a profile's time goes, the same candidate as a record (medians): `outside` is the request's wall time less
# the judgement's own phases (wall_s), i.e. what the judging process costs around the work: its start and LibTorch
# (cold), the socket and JSON (warm).
starts = []
for _ in range(5):
    seconds, _ = timed(lambda: subprocess.run([f"{bin_dir}/ca-verify", "--version"], stdout=subprocess.DEVNULL))
    starts.append(seconds)
print(f"\nA fresh judging process's start alone (`ca-verify --version`: the executable and LibTorch; median of 5): "
      f"{med(starts):.2f} s.\n")
print("| task | side | profile s | outside s | " + " | ".join(f"{p} s" for p in phases) + " |")
print("|---|---|---|---|" + "---|" * len(phases))
for task, sides in rows.items():
    for side in ("cold", "warm"):
        at = sides[side]
        cells = [f"{med(at[p]):.2f}" for p in phases]
        print(f"| {task} | {side} | {med(at['record']):.2f} | {med(at['outside']):.2f} | " + " | ".join(cells) + " |")
PY
