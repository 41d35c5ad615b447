"""Per level: episodes, pass rate, share > 5% faster than eager and than torch.compile, geometric-mean speedups
over passing episodes and with failures counted as 1.0; then one row per episode (so that a log that comes back
without the trajectories still has them). Usage: summarise_rollout.py TRAJECTORIES.jsonl"""
import collections
import json
import math
import re
import sys


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


levels = collections.defaultdict(list)
for line in open(sys.argv[1]):
    r = json.loads(line)
    found = re.search(r"level(\d+)", r["task_id"])
    level = "level" + found.group(1) if found else "?"
    levels[level].append(r)
print("level episodes pass >eager+5% >compile+5% geo_eager(pass) geo_eager(all) geo_compile(pass) geo_compile(all) ended")
for level, records in sorted(levels.items()):
    passed = [r for r in records if (r.get("verify") or {}).get("ok")]
    speed = lambda r, k: ((r.get("profile") or {}).get("speedup") or {}).get(k)
    eager = [speed(r, "vs_eager") for r in passed if speed(r, "vs_eager")]
    comp = [speed(r, "vs_compile") for r in passed if speed(r, "vs_compile")]
    n = len(records)
    ends = collections.Counter((r.get("end") or {}).get("reason") for r in records)
    print(f"{level} {n} {len(passed) / n:.1%} {sum(v > 1.05 for v in eager) / n:.1%} {sum(v > 1.05 for v in comp) / n:.1%} "
          f"{geomean(eager):.3f} {geomean(eager + [1.0] * (n - len(eager))):.3f} "
          f"{geomean(comp):.3f} {geomean(comp + [1.0] * (n - len(comp))):.3f} {dict(ends)}")

# Why the others did not pass: the uncovered ops (root causes named by the policy) and the judge's failing stages.
uncovered, failed = collections.Counter(), collections.Counter()
for records in levels.values():
    for r in records:
        extra = (r.get("turns") or [{}])[-1].get("extra") or {}
        if "uncovered" in extra:
            uncovered.update(node["op"] for node in extra["uncovered"])
        elif not (r.get("verify") or {}).get("ok"):
            message = (r.get("verify") or {}).get("message") or str(r.get("error"))
            failed[message.split(":")[0][:60]] += 1
print("uncovered ops:", dict(uncovered.most_common()))
print("covered but not passing, by the start of the message:", dict(failed.most_common()))

print("task verdict candidate_us eager_us compile_us vs_eager vs_compile reward judge_s wall_s")
fmt = lambda v, spec: format(v, spec) if isinstance(v, (int, float)) else "-"
for level, records in sorted(levels.items()):
    for r in sorted(records, key=lambda r: r["task_id"]):
        v, p = r.get("verify") or {}, r.get("profile") or {}
        verdict = "PASS" if v.get("ok") else v.get("stage") or ("error: " + str(r.get("error"))[:60] if r.get("error") else "-")
        t, sp = p.get("times_us") or {}, p.get("speedup") or {}
        print(r["task_id"], verdict, fmt(t.get("candidate"), ".1f"), fmt(t.get("eager"), ".1f"), fmt(t.get("compile"), ".1f"),
              fmt(sp.get("vs_eager"), ".3f"), fmt(sp.get("vs_compile"), ".3f"), (r.get("reward") or {}).get("value", "-"),
              fmt(r.get("judge_wall_s"), ".0f"), fmt(r.get("wall_s"), ".0f"))
