"""The summary of tests/gpu/train_recipe.sh: mean reward and pass rate (reward > 0) on the held-out tasks of each
evaluated checkpoint, then each arm's PPO iterations from its step log (the iteration's own rollout: reward_mean,
pass_rate; the update: kl, entropy, clip_fraction, explained_variance, grad_norm), and steps.png when matplotlib
is there.

    summarise_recipe.py OUT_DIR
"""
import glob
import json
import os
import sys


def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def main():
    out = sys.argv[1]
    order = {"base": 0, "rft": 1}
    evals = sorted(glob.glob(os.path.join(out, "eval-*.jsonl")),
                   key=lambda p: (order.get(os.path.basename(p)[5:-6], 2), p))
    print("held-out tasks: mean reward and pass rate (reward > 0) of each checkpoint")
    print(f"{'checkpoint':<20} {'episodes':>8} {'reward_mean':>11} {'pass_rate':>9} {'errors':>6}")
    for path in evals:
        rows = load(path)
        rewards = [r["reward"]["value"] for r in rows if isinstance(r.get("reward"), dict)
                   and isinstance(r["reward"].get("value"), (int, float))]
        errors = sum(1 for r in rows if r.get("error"))
        mean = sum(rewards) / len(rewards) if rewards else float("nan")
        rate = sum(1 for x in rewards if x > 0) / len(rewards) if rewards else float("nan")
        print(f"{os.path.basename(path)[5:-6]:<20} {len(rows):>8} {mean:>11.3f} {rate:>9.2f} {errors:>6}")
    for name in ("rft.log.jsonl", "value.log.jsonl"):
        path = os.path.join(out, name)
        if os.path.exists(path):
            rows = load(path)
            key = "loss" if name.startswith("rft") else "explained_variance"
            print(f"{name.split('.')[0]}: {len(rows)} updates, {key} {rows[0].get(key)} -> {rows[-1].get(key)}")
    arms = {}
    for path in sorted(glob.glob(os.path.join(out, "*", "steps.jsonl"))):
        arm = os.path.basename(os.path.dirname(path))
        arms[arm] = load(path)
        print(f"\n{arm}: PPO iterations (reward and pass rate of the iteration's own rollout on the train tasks)")
        cols = ["reward_mean", "pass_rate", "kl", "entropy", "clip_fraction", "explained_variance", "grad_norm",
                "value_loss", "tokens_per_s"]
        print(f"{'iter':>4} " + " ".join(f"{c[:12]:>12}" for c in cols))
        for r in arms[arm]:
            # A statistic of no variance (explained variance over equal returns) is logged as null.
            print(f"{r['iter']:>4} " + " ".join(f"{r[c] if r.get(c) is not None else float('nan'):>12.4g}"
                                                for c in cols))
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("\n(no matplotlib: steps.png not drawn)")
        return
    keys = ["reward_mean", "pass_rate", "kl", "entropy", "clip_fraction", "explained_variance"]
    fig, axes = plt.subplots(2, 3, figsize=(13, 7))
    for ax, key in zip(axes.flat, keys):
        for arm, rows in arms.items():
            ax.plot([r["iter"] for r in rows], [r.get(key, float("nan")) for r in rows], marker="o", label=arm)
        ax.set_title(key)
        ax.set_xlabel("PPO iteration")
    axes.flat[0].legend()
    fig.tight_layout()
    fig.savefig(os.path.join(out, "steps.png"), dpi=80)
    print(f"\nsteps.png: {', '.join(keys)} per iteration")


if __name__ == "__main__":
    main()
