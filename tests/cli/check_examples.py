"""Checks example candidates that went through `ca-verify | [ca-profile |] ca-reward`
against the `expect` (verdict) and `expect_reward` fields that
examples/candidates/pack.py put in them (a reward, N+ for at least N, or
<=NAME for at most what candidate NAME earned in the same run); prints a
table and exits 1 on any difference.

    python3 check_examples.py REWARDED.jsonl COUNT verify|profile
"""
import json
import sys


def reward_ok(verdict, want, got, profiled, rewards):
    if not profiled:  # without a profile a correct candidate earns 1, a wrong one -1
        return got == (1 if verdict == "PASS" else -1)
    if want.startswith("<="):  # a cheat earns at most what its honest twin, in the same run, earns
        twin = rewards.get(want[2:])
        return twin is not None and got <= twin
    if want.endswith("+"):
        return got >= float(want[:-1])
    return got == float(want)


def main(path, count, mode):
    records = [json.loads(line) for line in open(path)]
    bad = 0
    if len(records) != count:
        print(f"{len(records)} records, EXPECTED has {count}")
        bad += 1
    profiled = mode == "profile"
    rewards = {r["id"].split("/", 1)[-1]: r["reward"]["value"] for r in records}
    print(f"{'candidate':38} {'verdict':9} {'got':9} {'reward':>6} {'want':>4}  message")
    for r in records:
        v = r["verify"]
        got = "PASS" if v["ok"] else v["stage"]
        reward = r["reward"]["value"]
        message = v["message"]
        if profiled and v["ok"]:
            p = r["profile"]
            message = p.get("message") or json.dumps(p.get("times_us"))
            if p.get("ok") and (p["count"]["candidate"] < 2 or p["checked_calls"] <= p["count"]["candidate"]):
                bad += 1
                message += "  (too few timed or checked calls)"
        wrong = got != r["expect"] or not reward_ok(r["expect"], r["expect_reward"], reward, profiled, rewards)
        if v["ok"] and not (len(v["trials"]) == 5 and all(t["ok"] for t in v["trials"])):
            wrong = True
            message += "  (passed without 5 good trials)"
        bad += wrong
        print(f"{r['id']:38} {r['expect']:9} {got:9} {reward:6} {r['expect_reward']:>4}  {message[:150]}"
              + ("  <-- WRONG" if wrong else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2]), sys.argv[3]))
