"""Compiles a task program with torch.compile's backend (Inductor) into an
AOTInductor package that C++ loads (docs/TIMING.md: the compiled baseline).

The package takes the program's inputs and then its params as arguments, so
no weights are embedded: packages stay small and one package serves every
seed. Shapes are static: one package per program. Usage:

    python compile_task.py TASK.json PACKAGE.pt2 --device cpu|cuda [--tf32 none|pytorch|all]
                           [--threads N] [--expect-torch VERSION]
    python compile_task.py --batch LIST.jsonl --device cpu|cuda [...the same options]

TASK.json holds one task record (or just its program); PACKAGE.pt2 must end in
.pt2. --batch compiles many programs in this one process (importing torch and
warming Inductor up cost far more than a small program's compile): each line
of LIST.jsonl is {"task": TASK.json, "package": PACKAGE.pt2}.
--tf32 sets torch.backends' TF32 flags for the compile (docs/TIMING.md,
"Precision"): none (matmuls and cuDNN fp32), pytorch (PyTorch's defaults:
matmuls fp32, cuDNN TF32; the default) or all (both TF32). Inductor's own
matmul kernels bake the matmul flag in; extern kernels (cuDNN convolutions)
follow the loading process's settings when the package runs. --threads N (cpu) fixes the
OpenMP threads of the generated C++ (Inductor's cpp.threads; the default is
this process's torch.get_num_threads(), all cores). --expect-torch refuses,
before compiling, a torch whose version without its local part ("2.11.0" of
"2.11.0+cu130") differs: the C++ side that loads the package must be the same
LibTorch.

Prints one JSON line per package as it is done: {"package", "seconds",
"torch", "device", "tf32", "tf32_flags": {"matmul", "cudnn"}, "threads"},
tf32_flags as torch.backends reports them once set. In --batch mode a program that
fails gives {"package", "error", "torch"} and the others go on (exit 0).
Errors that stop the run (a bad LIST line, the torch check, the single form's
compile) go to stderr as one "compile_task.py: error:" line, exit 1.
"""
import argparse
import json
import sys
import time

import torch
import torch._inductor.config

DTYPES = {"float32": torch.float32, "float64": torch.float64, "float16": torch.float16,
          "bfloat16": torch.bfloat16, "int64": torch.int64, "int32": torch.int32, "int16": torch.int16,
          "int8": torch.int8, "uint8": torch.uint8, "bool": torch.bool}
MEMORY_FORMATS = {"contiguous_format": torch.contiguous_format, "preserve_format": torch.preserve_format,
                  "channels_last": torch.channels_last, "channels_last_3d": torch.channels_last_3d}


def resolve_op(qualified):
    namespace, rest = qualified.split("::", 1)
    name, _, overload = rest.partition(".")
    return getattr(getattr(getattr(torch.ops, namespace), name), overload or "default")


def fixed_list(value, argument):
    """A single number stands for a fixed-length list (int[2] stride=1), as the IR allows and ATen's
    Python arguments parser does; torch.ops under export wants the list spelled out."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and argument.N is not None:
        return [value] * argument.N
    return value


def convert(value, type_name, env, device):
    """One JSON argument as the op wants it, by the schema's type name."""
    if isinstance(value, str) and value.startswith("%") and not value.startswith("%%"):
        name, _, index = value[1:].partition("[")
        return env[name][int(index[:-1])] if index else env[name]
    if isinstance(value, list):
        element = type_name[:-2] if type_name.endswith("[]") else type_name
        return [convert(v, element, env, device) for v in value]
    if value is None:
        return device if "Device" in type_name else None
    if "ScalarType" in type_name:
        return DTYPES[value]
    if "MemoryFormat" in type_name:
        return MEMORY_FORMATS[value]
    if "Layout" in type_name:
        return torch.strided
    if isinstance(value, str) and value.startswith("%%"):
        return value[1:]
    return value


class Program(torch.nn.Module):
    """Runs the IR with torch.ops, taking inputs then params as arguments."""

    def __init__(self, program, device):
        super().__init__()
        self.program = program
        self.device = device

    def forward(self, *tensors):
        names = [t["name"] for t in self.program.get("inputs", []) + self.program.get("params", [])]
        env = dict(zip(names, tensors))
        for node in self.program["nodes"]:
            op = resolve_op(node["op"])
            schema = op._schema.arguments
            args = [convert(fixed_list(v, schema[i]), str(schema[i].type), env, self.device)
                    for i, v in enumerate(node.get("args", []))]
            types = {a.name: str(a.type) for a in schema}
            by_name = {a.name: a for a in schema}
            kwargs = {k: convert(fixed_list(v, by_name[k]), types[k], env, self.device)
                      for k, v in node.get("kwargs", {}).items()}
            for a in schema[len(args):]:
                if "Device" in str(a.type) and a.name not in kwargs:
                    kwargs[a.name] = self.device
            result = op(*args, **kwargs)
            outs = node["out"]
            if len(outs) == 1:
                env[outs[0]] = result
            else:
                env.update(zip(outs, result))
        outputs = []
        for name in self.program["outputs"]:
            base, _, index = name.lstrip("%").partition("[")
            outputs.append(env[base][int(index[:-1])] if index else env[base])
        return tuple(outputs)


def example_tensors(program, device):
    tensors = []
    for spec in program.get("inputs", []) + program.get("params", []):
        dtype = DTYPES[spec["dtype"]]
        if dtype.is_floating_point:
            tensors.append(torch.randn(spec["shape"], dtype=dtype, device=device))
        else:
            tensors.append(torch.randint(0, 2, spec["shape"], device=device).to(dtype))
    return tensors


TF32_MODES = {"none": (False, False), "pytorch": (False, True), "all": (True, True)}  # (matmul, cudnn)


def set_modes(tf32, threads):
    """The process-wide settings every package of this run is compiled under."""
    # Both TF32 flags set explicitly: the package must match the cache key's
    # mode whatever this torch's defaults (or TORCH_ALLOW_TF32_CUBLAS_OVERRIDE) are.
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = TF32_MODES[tf32]
    if threads:
        # The generated C++ hard-codes `#pragma omp parallel num_threads(N)`
        # with N = cpp.threads, or torch.get_num_threads() at compile time
        # when that is -1 (torch/_inductor/utils.py parallel_num_threads);
        # with 1 it makes no parallel regions at all.
        torch._inductor.config.cpp.threads = threads
        torch.set_num_threads(threads)


def compile_one(task_path, package_path, args):
    """Exports and compiles one task's program; returns its report."""
    with open(task_path) as f:
        record = json.load(f)
    program = record.get("program", record)
    started = time.time()
    with torch.no_grad():
        module = Program(program, torch.device(args.device)).eval()
        exported = torch.export.export(module, tuple(example_tensors(program, args.device)), dynamic_shapes=None)
        # The loader checks tensors against the program's fixed shapes; a
        # symbolic size would mean the package is not specialised to them.
        if exported.range_constraints:
            raise RuntimeError(f"export produced dynamic shapes: {exported.range_constraints}")
        torch._inductor.aoti_compile_and_package(exported, package_path=package_path)
    return {"package": package_path, "seconds": round(time.time() - started, 3), "torch": torch.__version__,
            "device": args.device, "tf32": args.tf32, "tf32_flags": tf32_flags(), "threads": args.threads}


def tf32_flags():
    """The TF32 flags torch reports now: what the package was compiled under, for the C++ side to check."""
    return {"matmul": torch.backends.cuda.matmul.allow_tf32, "cudnn": torch.backends.cudnn.allow_tf32}


def batch_pairs(list_path):
    """The (task, package) pairs of a --batch list; errors name the line."""
    pairs = []
    with open(list_path) as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
                pairs.append((str(entry["task"]), str(entry["package"])))
            except (ValueError, KeyError, TypeError) as error:
                raise ValueError(f"{list_path}:{number}: expected {{\"task\": PATH, \"package\": PATH}}: "
                                 f"{type(error).__name__}: {error}") from None
    return pairs


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task", nargs="?")
    parser.add_argument("package", nargs="?")
    parser.add_argument("--batch", metavar="LIST.jsonl")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--tf32", default="pytorch", choices=list(TF32_MODES))
    parser.add_argument("--threads", type=int, default=0, metavar="N")
    parser.add_argument("--expect-torch", metavar="VERSION")
    args = parser.parse_args()
    if (args.batch is None) == (args.task is None or args.package is None) or (args.batch and args.task):
        parser.error("give either TASK.json PACKAGE.pt2 or --batch LIST.jsonl")
    if args.threads < 0:
        parser.error("--threads must be positive")
    if args.expect_torch and torch.__version__.split("+")[0] != args.expect_torch:
        raise RuntimeError(f"torch {torch.__version__} here, but the loader is LibTorch {args.expect_torch}: "
                           "use the Python of the virtualenv LibTorch came from")
    set_modes(args.tf32, args.threads)
    if args.batch is None:
        print(json.dumps(compile_one(args.task, args.package, args)))
        return
    for task, package in batch_pairs(args.batch):
        try:
            report = compile_one(task, package, args)
        except Exception as error:  # one program's failure is its own line; the others go on
            report = {"package": package, "error": f"{type(error).__name__}: {error}", "torch": torch.__version__}
        print(json.dumps(report), flush=True)


if __name__ == "__main__":
    try:
        main()
    except Exception as error:  # the one place errors become a message and exit 1
        print(f"compile_task.py: error: {type(error).__name__}: {error}", file=sys.stderr)
        sys.exit(1)
