"""Checks a KernelBench import: for each task record ca-crawl kernelbench wrote, rebuilds the ORIGINAL problem's
Model at the record's scale, loads the task's weights (its safetensors file), runs it in eager PyTorch on the
task's inputs and compares with the C++ interpreter's outputs. Usage:

    python check_import.py RECORDS.jsonl --digests DIGESTS.jsonl [DUMP_DIR] [--library libca_tensors.so]
    python check_import.py RECORDS.jsonl DUMP_DIR [--device cpu|cuda]
    python check_import.py --summarize CHECK.txt RECORDS.jsonl... [--problems FILE] [--records-out FILE]

With --digests (ca-crawl kernelbench --digests): no tensor is moved. The inputs are drawn here as ca-crawl drew
them, through libca_tensors.so (ir/tensor_abi.h: the same seed, streams and device), and their digests checked
against ca-crawl's; the Model's outputs are digested with the same function (on the GPU for CUDA tensors): same
count, dtypes, shapes and digests is "exact" (bit-identical). Where an output's digest differs and DUMP_DIR holds
<id>.safetensors, its values decide as below; without one the verdict is "inexact" (not bit-identical, values not
compared; scripts/kernelbench_check.sh then imports that problem again with --dump).

With DUMP_DIR alone (ca-crawl kernelbench --dump): the Model runs on the dumped inputs; "exact" when the outputs
are equal (NaN where NaN, -0.0 equal to 0.0), "close" when same shape and dtype and torch.allclose(cpp, eager,
rtol=1e-5, atol=1e-6, equal_nan=True), else "differs".

Prints one line per record as it goes, "VERDICT ID [DETAIL] (SECONDS s)", VERDICT one of exact, close, differs,
inexact, error (the check could not run; a CUDA out-of-memory is one) and import_error (a record ca-crawl could not
import, with its error), then a summary per level, "level N: imported a of b, equal c (d exact)"; exit 1 when a
task is not exact or close, or a record is not imported.

--summarize prints that summary for a run checked by several processes (scripts/kernelbench_check.sh): the last
record per id among RECORDS (in order) and the last verdict line per id in CHECK.txt count; --problems (lines
"LEVEL ID") counts problems that have no record at all, and --records-out writes the records kept.
"""
import argparse
import collections
import ctypes
import json
import os
import sys
import time
from pathlib import Path

import torch
from safetensors.torch import load_file

sys.path.insert(0, str(Path(__file__).resolve().parent))
from import_kernelbench import DTYPES, load_problem  # noqa: E402  (the same scaling rule and dtype names as the import)

RTOL, ATOL = 1e-5, 1e-6
TORCH_DTYPES = {name: dtype for dtype, name in DTYPES.items()}
DEFAULT_LIBRARY = Path(__file__).resolve().parent.parent / "build" / "lib" / "libca_tensors.so"
EQUAL = ("exact", "close")
VERDICTS = ("exact", "close", "differs", "inexact", "error", "import_error")


class Tensors:
    """libca_tensors.so through ctypes: draw a spec into a torch tensor's memory, digest a tensor's bytes."""

    def __init__(self, path):
        self.library = ctypes.CDLL(str(path))
        self.library.ca_draw_tensor.argtypes = [ctypes.c_char_p, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_void_p,
                                                ctypes.c_uint64, ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p,
                                                ctypes.c_size_t]
        self.library.ca_tensor_digest.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_int, ctypes.c_void_p,
                                                  ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
        self.error = ctypes.create_string_buffer(1024)

    @staticmethod
    def where(tensor):
        """(device index or -1 for host memory, the cudaStream_t torch queues work on there)."""
        if tensor.device.type == "cpu":
            return -1, None
        index = tensor.device.index if tensor.device.index is not None else torch.cuda.current_device()
        return index, torch.cuda.current_stream(index).cuda_stream

    def draw(self, spec, seed, stream, device):
        tensor = torch.empty(spec["shape"], dtype=TORCH_DTYPES[spec["dtype"]], device=device)
        index, cuda_stream = self.where(tensor)
        if self.library.ca_draw_tensor(json.dumps(spec).encode(), seed, stream, tensor.data_ptr(),
                                       tensor.numel() * tensor.element_size(), index, cuda_stream, self.error,
                                       len(self.error)) != 0:
            raise RuntimeError(f"drawing {spec['name']}: {self.error.value.decode()}")
        return tensor

    def digest(self, tensor):
        tensor = tensor.contiguous()
        index, cuda_stream = self.where(tensor)
        hex_digest = ctypes.create_string_buffer(33)
        if self.library.ca_tensor_digest(tensor.data_ptr(), tensor.numel() * tensor.element_size(), index,
                                         cuda_stream, hex_digest, self.error, len(self.error)) != 0:
            raise RuntimeError(f"digest: {self.error.value.decode()}")
        return hex_digest.value.decode()


def flat_tensors(value):
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in flat_tensors(v)]
    return []


def eager_outputs(record, inputs, device):
    """The original Model with the task's weights, run on `inputs` (the program's inputs, in order)."""
    problem = load_problem(record["file"], record["scale"])
    model = problem.Model(*problem.get_init_inputs()).eval().to(device)
    weights = {}
    for spec in record["program"]["params"]:
        source = spec["init"]["file"]
        weights.setdefault(source["path"], load_file(source["path"]))
        value = weights[source["path"]][source["key"]]
        try:
            target = model.get_parameter(source["key"])
        except AttributeError:
            try:
                target = model.get_buffer(source["key"])
            except AttributeError:
                # A tensor kept as a plain attribute (an RNN's initial hidden state), lifted as a constant; else a
                # constant that forward makes itself.
                owner_name, _, attribute = source["key"].rpartition(".")
                owner = model.get_submodule(owner_name) if owner_name else model
                target = getattr(owner, attribute, None)
                if not isinstance(target, torch.Tensor):
                    continue
        with torch.no_grad():
            target.copy_(value)
    with torch.device("meta"):
        example = list(problem.get_inputs())
    tensors = iter(inputs)
    args = [next(tensors) if isinstance(a, torch.Tensor) else a for a in example]
    with torch.no_grad():
        return flat_tensors(model(*args))


def compare_values(actual, expected):
    """(verdict, detail) for the C++ outputs `actual` against eager's `expected`: exact, close or differs."""
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


def dumped(record, dump_dir):
    path = Path(dump_dir) / f"{record['id']}.safetensors" if dump_dir else None
    return load_file(str(path)) if path and path.exists() else None


def check_dump(record, dump_dir, device):
    dump = dumped(record, dump_dir)
    if dump is None:
        raise FileNotFoundError(f"no {record['id']}.safetensors in {dump_dir}")
    # Copied: load_file's tensors can sit at any 8-byte offset of the file, and a BLAS kernel's summation order
    # may depend on its operands' alignment (level 1 problem 4 was "close" on them, bit-exact on copies).
    inputs = [dump[f"inputs.{spec['name']}"].to(device, copy=True) for spec in record["program"]["inputs"]]
    expected = eager_outputs(record, inputs, device)
    return compare_values([dump[f"outputs.{i}"] for i in range(len(record["program"]["outputs"]))], expected)


def check_digests(record, digests, tensors, dump_dir):
    """(verdict, detail) from the digests ca-crawl wrote for the record; see the module's docstring."""
    device = torch.device(digests["device"])
    program = record["program"]
    inputs = []
    for spec, drawn in zip(program["inputs"], digests["inputs"]):
        inputs.append(tensors.draw(spec, digests["seed"], drawn["stream"], device))
        if tensors.digest(inputs[-1]) != drawn["digest"]:
            raise RuntimeError(f"input {spec['name']} drawn here differs from ca-crawl's")
    expected = eager_outputs(record, inputs, device)
    del inputs
    cpp = digests["outputs"]
    if len(expected) != len(cpp):
        return "differs", f"{len(cpp)} outputs, eager gives {len(expected)}"
    differing = []
    for i, (output, eager) in enumerate(zip(cpp, expected)):
        if output["dtype"] != DTYPES.get(eager.dtype) or output["shape"] != list(eager.shape):
            return "differs", f"output {i}: {output['dtype']} {output['shape']}, eager {eager.dtype} {list(eager.shape)}"
        if tensors.digest(eager) != output["digest"]:
            differing.append(i)
    if not differing:
        return "exact", ""
    dump = dumped(record, dump_dir)
    if dump is None:
        return "inexact", f"digest of output {', '.join(map(str, differing))} differs; values not compared"
    return compare_values([dump[f"outputs.{i}"] for i in range(len(cpp))], expected)


def read_records(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def first_line(error):
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0] if text else ''}"


def check(args):
    records = read_records(args.records)
    digests = {d["id"]: d for d in read_records(args.digests)} if args.digests else {}
    tensors = Tensors(args.library) if args.digests else None
    verdicts = {}
    for record in records:
        start = time.monotonic()
        if record.get("kind") != "task":
            verdict, detail = "import_error", record.get("error", "")
        else:
            try:
                if args.digests:
                    if record["id"] not in digests:
                        raise KeyError(f"{args.digests} has no line for {record['id']}")
                    verdict, detail = check_digests(record, digests[record["id"]], tensors, args.dump_dir)
                else:
                    verdict, detail = check_dump(record, args.dump_dir, args.device)
            except Exception as error:  # a task that cannot be checked is reported and the run goes on
                verdict, detail = "error", first_line(error)
            if torch.cuda.is_available():
                torch.cuda.empty_cache()  # processes checking beside this one need the memory
        verdicts[record["id"]] = verdict
        print(" ".join(filter(None, [f"{verdict:8}", record["id"], detail, f"({time.monotonic() - start:.1f} s)"])), flush=True)
    return summarize(records, verdicts)


def summarize(records, verdicts, problems=()):
    """Prints the summary per level; returns the exit code. `problems` are (level, id) pairs that count without
    a record."""
    by_id = {r["id"]: r for r in records}
    levels = collections.defaultdict(list)  # level -> ids
    for level, problem in problems:
        levels[str(level)].append(problem)
    for record in records:
        if record["id"] not in levels[str(record.get("level"))]:
            levels[str(record.get("level"))].append(record["id"])
    bad = []
    for level in sorted(levels, key=lambda name: (len(name), name)):
        ids = levels[level]
        imported = [i for i in ids if by_id.get(i, {}).get("kind") == "task"]
        equal = [i for i in imported if verdicts.get(i) in EQUAL]
        exact = [i for i in imported if verdicts.get(i) == "exact"]
        print(f"level {level}: imported {len(imported)} of {len(ids)}, equal {len(equal)} ({len(exact)} exact)")
        bad += [i for i in ids if i not in equal]
    print("not imported or not equal:", " ".join(bad) if bad else "none")
    return 1 if bad else 0


def summarize_run(args):
    records = {}
    for path in args.records_files:
        for record in read_records(path):
            records.pop(record["id"], None)
            records[record["id"]] = record
    verdicts = {}
    with open(args.summarize) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 2 and parts[0] in VERDICTS:
                verdicts[parts[1]] = parts[0]
    problems = []
    if args.problems:
        with open(args.problems) as f:
            problems = [tuple(line.split()) for line in f if line.strip()]
    if args.records_out:
        with open(args.records_out, "w") as f:
            f.writelines(json.dumps(r) + "\n" for r in records.values())
    return summarize(list(records.values()), verdicts, problems)


def main():
    if sys.argv[1:2] == ["--summarize"]:
        parser = argparse.ArgumentParser(description="Summarizes a run's verdict lines (see check_import.py's docstring)")
        parser.add_argument("--summarize", metavar="CHECK_TXT", required=True, help="the verdict lines, in order")
        parser.add_argument("records_files", nargs="+", metavar="RECORDS", help="task records, later ones win")
        parser.add_argument("--problems", help='lines "LEVEL ID", one per problem that should have a record')
        parser.add_argument("--records-out", help="write the records kept here")
        return summarize_run(parser.parse_args())
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("records", help="the task records (ca-crawl kernelbench's output)")
    parser.add_argument("dump_dir", nargs="?", help="ca-crawl kernelbench --dump's folder")
    parser.add_argument("--digests", help="ca-crawl kernelbench --digests's file")
    parser.add_argument("--library", default=os.environ.get("CA_TENSORS_LIB", str(DEFAULT_LIBRARY)),
                        help="libca_tensors.so (default: $CA_TENSORS_LIB, else the checkout's build/lib)")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"],
                        help="where tasks run without --digests (with it: where ca-crawl ran them)")
    args = parser.parse_args()
    if not (args.digests or args.dump_dir):
        parser.error("give DUMP_DIR, --digests FILE, or both")
    return check(args)


if __name__ == "__main__":
    sys.exit(main())
