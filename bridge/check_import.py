"""Checks a KernelBench import: for each task that `ca-crawl kernelbench
--dump DIR` wrote, runs the ORIGINAL problem's Model in eager PyTorch with the
task's weights (its safetensors file) on the inputs the C++ side drew, and
compares with the C++ interpreter's outputs. Usage:

    python check_import.py RECORDS.jsonl DUMP_DIR [--device cpu|cuda] [--only N]

Equal means: same shape and dtype, and torch.allclose(cpp, eager, rtol=1e-5,
atol=1e-6, equal_nan=True); bit-exact results are counted separately. Prints
one line per task and a summary per level; exit 1 when a task differs or
cannot be checked.
"""
import argparse
import collections
import json
import sys
from pathlib import Path

import torch
from safetensors.torch import load_file

sys.path.insert(0, str(Path(__file__).resolve().parent))
from import_kernelbench import load_problem  # noqa: E402  (the same scaling rule as the import)

RTOL, ATOL = 1e-5, 1e-6


def flat_tensors(value):
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in flat_tensors(v)]
    return []


def eager_outputs(record, dump, device):
    problem = load_problem(record["file"], record["scale"])
    model = problem.Model(*problem.get_init_inputs()).eval().to(device)
    program = record["program"]
    weights = {}
    for spec in program["params"]:
        source = spec["init"]["file"]
        weights.setdefault(source["path"], load_file(source["path"]))
        value = weights[source["path"]][source["key"]]
        try:
            target = model.get_parameter(source["key"])
        except AttributeError:
            try:
                target = model.get_buffer(source["key"])
            except AttributeError:
                continue  # a constant that forward makes itself
        with torch.no_grad():
            target.copy_(value)
    with torch.device("meta"):
        example = list(problem.get_inputs())
    tensors = iter(dump[f"inputs.{spec['name']}"].to(device) for spec in program["inputs"])
    args = [next(tensors) if isinstance(a, torch.Tensor) else a for a in example]
    with torch.no_grad():
        return flat_tensors(model(*args))


def compare(record, dump_dir, device):
    """Returns (verdict, detail): verdict is "exact", "close", "differs" or "error"."""
    dump = load_file(str(Path(dump_dir) / f"{record['id']}.safetensors"))
    expected = eager_outputs(record, dump, device)
    actual = [dump[f"outputs.{i}"] for i in range(len(record["program"]["outputs"]))]
    if len(expected) != len(actual):
        return "differs", f"{len(actual)} outputs, eager gives {len(expected)}"
    verdict, worst = "exact", 0.0
    for i, (cpp, eager) in enumerate(zip(actual, expected)):
        eager = eager.cpu()
        if cpp.shape != eager.shape or cpp.dtype != eager.dtype:
            return "differs", f"output {i}: {cpp.dtype} {list(cpp.shape)}, eager {eager.dtype} {list(eager.shape)}"
        if torch.equal(cpp, eager) or (cpp.is_floating_point() and torch.equal(cpp.isnan(), eager.isnan()) and
                                       torch.equal(cpp.nan_to_num(), eager.nan_to_num())):
            continue
        if not cpp.is_floating_point() or not torch.allclose(cpp, eager, rtol=RTOL, atol=ATOL, equal_nan=True):
            diff = (cpp.double() - eager.double()).abs().nan_to_num(nan=float("inf")).max().item()
            return "differs", f"output {i}: max |cpp - eager| = {diff:.3g}"
        verdict = "close"
        worst = max(worst, (cpp.double() - eager.double()).abs().nan_to_num().max().item())
    return verdict, f"max |cpp - eager| = {worst:.3g}" if verdict == "close" else ""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("records")
    parser.add_argument("dump_dir")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    args = parser.parse_args()
    counts = collections.defaultdict(collections.Counter)  # level -> verdict -> count
    with open(args.records) as f:
        records = [json.loads(line) for line in f if line.strip()]
    for record in records:
        level = f"level {record.get('level')}"
        if record.get("kind") != "task":
            counts[level]["not imported"] += 1
            continue
        try:
            verdict, detail = compare(record, args.dump_dir, args.device)
        except Exception as error:  # a task that cannot be checked is reported and the run goes on
            verdict, detail = "error", f"{type(error).__name__}: {str(error).strip().splitlines()[0] if str(error).strip() else ''}"
        counts[level][verdict] += 1
        print(f"{verdict:8} {record['id']} {detail}".rstrip(), flush=True)
    bad = 0
    for level, c in sorted(counts.items()):
        equal = c["exact"] + c["close"]
        bad += c["differs"] + c["error"]
        print(f"{level}: {equal} equal ({c['exact']} exact) of {equal + c['differs'] + c['error']} imported; "
              f"{c['differs']} differ, {c['error']} errors, {c['not imported']} not imported")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
