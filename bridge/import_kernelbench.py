"""Imports KernelBench problem files as task records (ca-crawl kernelbench
runs it; see man ca-crawl). Usage:

    python import_kernelbench.py DIR... --params-dir D [--scale S] [--seed N] [--skip LIST]

Every `*.py` in each DIR (sorted by problem number) gives one JSON line on
stdout: a task record, or an import_error record saying why. A problem is
loaded with its module-level sizes scaled (below), `Model(*get_init_inputs())`
is built on the CPU after torch.manual_seed(seed), its parameters, buffers and
lifted constants are written to D/<id>.safetensors (keys: their qualified
names), and the model is exported with torch.export (on uninitialised inputs,
which tracing with fake tensors never touches), then `run_decompositions({})`
for a functional graph.

Scaling (--scale S, default 1: none): each module-level assignment whose
right side holds only number literals (with arithmetic and tuples) binds its
integers v >= 16 as max(16, v // S); integers below 16 (kernel sizes, strides,
dims) and assignments that use other names (`groups = in_channels`) are left
as written, so the latter follow the scaled sizes. S is a ceiling: a problem
that fails at S (a pooling output of size 0, an image size that no longer
matches a patch size) is tried at S-1, S-2, ... down to 1, and its record
holds the scale it was imported at; one the IR cannot express (Unsupported)
or that does not parse is not tried again.

State: a forward that updates buffers (an RNN's hidden state kept between
calls, `self.h.copy_(h)`) or its inputs in place is imported as one call
from the initial state: the task's outputs are forward's return values, and
the updates, which only a later call could see, are dropped (the record's
`state_updates` names them). Tensors kept as plain attributes are lifted
constants, written with the params.

Literals: infinities and NaN (`masked_fill(mask, float("-inf"))`) are
written as {"float": "-inf"}, {"float": "inf"}, {"float": "nan"}
(docs/IR.md, Arguments).

Input distributions come from watching get_inputs() run: a tensor returned
straight from torch.rand / randn / randint / ones / zeros / full (or their
_like forms), or a dtype conversion of one, gets that init; one computed from
such tensors (`(A + A.T) / 2`, `.softmax(-1)`) gets the init of the first
factory it came from and is listed in the record's `derived_inputs` with the
expression, since the IR cannot draw it. Non-tensor inputs are baked into the
graph as constants by torch.export.
"""
import argparse
import ast
import contextlib
import importlib.util
import json
import operator
import re
import sys
import traceback
import types
import warnings
from pathlib import Path

import torch
from safetensors.torch import save_file
from torch.overrides import TorchFunctionMode

SCALE_MIN = 16  # integers below it are never scaled, and none is scaled below it
DTYPES = {torch.float32: "float32", torch.float64: "float64", torch.float16: "float16", torch.bfloat16: "bfloat16",
          torch.int64: "int64", torch.int32: "int32", torch.int16: "int16", torch.int8: "int8", torch.uint8: "uint8",
          torch.bool: "bool"}
MEMORY_FORMATS = {torch.contiguous_format: "contiguous_format", torch.preserve_format: "preserve_format",
                  torch.channels_last: "channels_last", torch.channels_last_3d: "channels_last_3d"}
# Ops that only alias or copy their first argument, which a program can read directly.
PASS_THROUGH = {torch.ops.aten.detach.default, torch.ops.aten.lift_fresh_copy.default, torch.ops.aten.alias.default}
CONVERSIONS = {"float", "double", "half", "bfloat16", "long", "int", "short", "bool", "to", "type", "contiguous", "clone"}


class Unsupported(Exception):
    """A problem this importer cannot express as a task; the message says why."""


# An import_error's `stage`, the step that failed (ca-synth --llm counts its model's failures by it): syntax (the
# file does not parse), load (its module-level code, get_inputs, get_init_inputs or Model(...) raise, or it defines
# no Model), shape (forward raises a shape error on the inputs), forward (forward raises otherwise), export (forward
# runs but torch.export cannot capture it), unsupported (the exported graph holds what a task cannot express).
SHAPE_ERROR = re.compile(r"shape|size|dimension|\bdims?\b|channels|broadcast", re.IGNORECASE)


@contextlib.contextmanager
def stage(name):
    """Tags an exception raised inside with `name` as its stage, unless an inner stage did."""
    try:
        yield
    except Exception as error:
        if not hasattr(error, "import_stage"):
            error.import_stage = "syntax" if isinstance(error, SyntaxError) else name
        raise


def forward_failure(model, example):
    """Why torch.export failed: runs forward alone on fake inputs (shapes only, no memory) and returns "shape" or
    "forward" when that raises too, "export" when only export fails."""
    from torch._subclasses import fake_tensor
    # What a real forward does but shapes alone cannot (values deciding control flow or output sizes) is export's
    # limit, not the program's error.
    data_dependent = (fake_tensor.DataDependentOutputException, fake_tensor.DynamicOutputShapeException,
                      torch.fx.experimental.symbolic_shapes.GuardOnDataDependentSymNode)
    try:
        with torch.no_grad(), fake_tensor.FakeTensorMode(allow_non_fake_inputs=True):
            model(*[torch.empty(t.shape, dtype=t.dtype) if isinstance(t, torch.Tensor) else t for t in example])
    except data_dependent:
        return "export"
    except Exception as error:
        shape = isinstance(error, (RuntimeError, ValueError, IndexError)) and SHAPE_ERROR.search(str(error))
        return "shape" if shape else "forward"
    return "export"


def scaled(value, scale):
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value if value < SCALE_MIN else max(SCALE_MIN, value // scale)
    if isinstance(value, tuple):
        return tuple(scaled(v, scale) for v in value)
    return value


def literal_only(expr):
    allowed = (ast.Constant, ast.Tuple, ast.List, ast.BinOp, ast.UnaryOp, ast.operator, ast.unaryop, ast.Load)
    return all(isinstance(node, allowed) for node in ast.walk(expr))


def load_problem(path, scale):
    """Runs the file statement by statement, scaling literal sizes as they are bound."""
    tree = ast.parse(Path(path).read_text(), filename=str(path))
    module = types.ModuleType(Path(path).stem)
    module.__file__ = str(path)
    for statement in tree.body:
        exec(compile(ast.Module([statement], []), str(path), "exec"), module.__dict__)
        if scale > 1 and isinstance(statement, ast.Assign) and literal_only(statement.value):
            for target in statement.targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        module.__dict__[name.id] = scaled(module.__dict__[name.id], scale)
    for name in ("Model", "get_inputs", "get_init_inputs"):
        if not hasattr(module, name):
            raise Unsupported(f"the file defines no {name}")
    return module


class InputOrigins(TorchFunctionMode):
    """Remembers, for each tensor made while get_inputs runs, the init it was
    drawn with and the expression that made it."""

    def __init__(self):
        super().__init__()
        self.origins = {}  # id(tensor) -> (tensor, init, expression, derived)

    def factory_init(self, func, args, kwargs):
        name = func.__name__.removesuffix("_like")
        if name in ("rand", "randn", "ones", "zeros"):
            return name
        if name == "randint":
            numbers = [a for a in args if isinstance(a, int)]
            low, high = (0, numbers[0]) if len(numbers) == 1 else numbers[:2]
            return {"randint": [kwargs.get("low", low), kwargs.get("high", high)]}
        if name == "full":
            return {"constant": args[1] if len(args) > 1 else kwargs["fill_value"]}
        return None

    def origin(self, value):
        entry = self.origins.get(id(value))
        return entry[1:] if entry else None

    def __torch_function__(self, func, types_, args=(), kwargs=None):
        kwargs = kwargs or {}
        result = func(*args, **kwargs)
        if not isinstance(result, torch.Tensor):
            return result
        init = self.factory_init(func, args, kwargs)
        if init is not None:
            self.origins[id(result)] = (result, init, init if isinstance(init, str) else func.__name__, False)
            return result
        sources = [self.origin(a) for a in list(args) + list(kwargs.values()) if isinstance(a, torch.Tensor)]
        sources = [s for s in sources if s]
        if not sources:
            return result
        name = getattr(func, "__name__", str(func))
        if name == "__get__":  # a property such as A.T: name the property
            name = getattr(getattr(func, "__self__", None), "__name__", name)
        if name in CONVERSIONS and len(sources) == 1:
            self.origins[id(result)] = (result,) + sources[0]
        else:
            expression = f"{name}({', '.join(s[1] for s in sources)})"
            self.origins[id(result)] = (result, sources[0][0], expression, True)
        return result


def input_init(init, dtype):
    """The init as the IR spells it, or the IR's default where the dtype cannot take it."""
    floating_only = init in ("rand", "randn")
    if floating_only and not dtype.is_floating_point:
        return None
    return init


def convert_literal(value, where):
    """A non-reference argument as the IR's JSON literal (docs/IR.md, Arguments)."""
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, float):
        if value != value:
            return {"float": "nan"}
        if value in (float("inf"), float("-inf")):
            return {"float": "inf" if value > 0 else "-inf"}
        return value
    if isinstance(value, str):
        return "%" + value if value.startswith("%") else value
    if isinstance(value, torch.dtype):
        if value not in DTYPES:
            raise Unsupported(f"{where}: dtype {value} is not one the IR has")
        return DTYPES[value]
    if isinstance(value, torch.memory_format):
        return MEMORY_FORMATS[value]
    if isinstance(value, torch.layout):
        return "strided"
    if isinstance(value, torch.device):
        return None  # the program runs on the device it is given
    raise Unsupported(f"{where}: argument {value!r} ({type(value).__name__}) has no JSON form")


def is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def scalar_overload(op, node):
    """The overload that takes the node's numbers where `op` wants tensors.

    Export records `x * 2.0` as mul.Tensor(x, 2.0) (eager wraps the number in a
    tensor); the IR's Tensor arguments take only references, so mul.Scalar is
    used, which ATen computes the same way."""
    arguments = op._schema.arguments
    given = list(enumerate(node.args)) + [(next((i for i, a in enumerate(arguments) if a.name == k), None), v)
                                           for k, v in node.kwargs.items()]
    numbers = {i for i, value in given if i is not None and is_number(value) and str(arguments[i].type) == "Tensor"}
    if not numbers:
        return op
    packet = getattr(getattr(torch.ops, op.namespace), op._schema.name.split("::")[1])
    for name in packet.overloads():
        candidate = getattr(packet, name)._schema
        if len(candidate.arguments) != len(arguments) or len(candidate.returns) != len(op._schema.returns):
            continue
        # Python spells the Scalar type "number".
        if all(c.name == a.name and str(c.type) == ("number" if i in numbers else str(a.type))
               for i, (c, a) in enumerate(zip(candidate.arguments, arguments))):
            return getattr(packet, name)
    raise Unsupported(f"node {node.name}: {op} gets a number for a tensor and has no Scalar overload")


class GraphTranslator:
    """Turns an exported graph into the IR's nodes, with "%name" references."""

    def __init__(self):
        self.refs = {}  # fx node -> "%name" or "%name[i]"
        self.nodes = []

    def arg(self, value, where):
        if isinstance(value, torch.fx.Node):
            return self.refs[value]
        if isinstance(value, (list, tuple)):
            return [self.arg(v, f"{where}[{i}]") for i, v in enumerate(value)]
        return convert_literal(value, where)

    def call(self, node):
        target = node.target
        if target is operator.getitem:
            base, index = node.args
            base_ref = self.refs[base]
            self.refs[node] = base_ref[index] if isinstance(base_ref, list) else f"{base_ref}[{index}]"
            return
        if not isinstance(target, torch._ops.OpOverload):
            raise Unsupported(f"node {node.name}: {target} is not an ATen operator")
        if target in PASS_THROUGH:
            self.refs[node] = self.refs[node.args[0]]
            return
        target = scalar_overload(target, node)
        schema = target._schema
        qualified = schema.name + ("" if target._overloadname == "default" else "." + target._overloadname)
        if schema.is_mutable:
            raise Unsupported(f"node {node.name}: {qualified} writes to its arguments")
        record = {"op": qualified, "args": [self.arg(a, f"{qualified} args[{i}]") for i, a in enumerate(node.args)]}
        if node.kwargs:
            record["kwargs"] = {k: self.arg(v, f"{qualified} {k}") for k, v in node.kwargs.items()}
        if len(schema.returns) == 1:
            record["out"] = [node.name]
            self.refs[node] = "%" + node.name
        else:
            record["out"] = [f"{node.name}_{i}" for i in range(len(schema.returns))]
            self.refs[node] = ["%" + name for name in record["out"]]
        self.nodes.append(record)


def problem_id(level, stem):
    return f"kernelbench-level{level}-{stem}" if level is not None else f"kernelbench-{stem}"


def import_at_largest_scale(path, level, args):
    """Imports the problem at the largest scale <= args.scale that works (--scale is a ceiling). A failure scale
    cannot cause (Unsupported, a syntax error) is raised at once; otherwise the error at args.scale is, once every
    scale down to 1 failed."""
    first_error = None
    for scale in range(args.scale, 0, -1):
        try:
            return import_problem(path, level, args, scale)
        except Exception as error:
            first_error = first_error or error
            if isinstance(error, Unsupported) or getattr(error, "import_stage", None) == "syntax":
                raise first_error
    raise first_error


def import_problem(path, level, args, scale):
    with stage("load"):
        problem = load_problem(path, scale)
        origins = InputOrigins()
        with torch.device("meta"), origins:
            example = list(problem.get_inputs())
        tensors = [t for t in example if isinstance(t, torch.Tensor)]
        torch.manual_seed(args.seed)
        model = problem.Model(*problem.get_init_inputs()).eval()
    state = dict(model.named_parameters()) | dict(model.named_buffers())
    # Export traces with fake tensors, so uninitialised CPU inputs are never touched (no memory is used),
    # and constants that forward makes on its input's device get real values.
    empty_inputs = [torch.empty(t.shape, dtype=t.dtype) if isinstance(t, torch.Tensor) else t for t in example]
    try:
        with torch.no_grad():
            exported = torch.export.export(model, tuple(empty_inputs)).run_decompositions({})
    except Exception as error:
        error.import_stage = forward_failure(model, example)
        raise

    program = {"inputs": [], "params": [], "nodes": [], "outputs": []}
    translator = GraphTranslator()
    params_path = str(Path(args.params_dir) / (problem_id(level, Path(path).stem) + ".safetensors"))
    weights = {}
    derived = {}
    state_updates = []
    placeholders = [n for n in exported.graph.nodes if n.op == "placeholder"]
    user_inputs = iter(tensors)
    for spec, node in zip(exported.graph_signature.input_specs, placeholders):
        kind = spec.kind.name
        translator.refs[node] = "%" + node.name
        if isinstance(spec.arg, torch.export.graph_signature.ConstantArgument):
            continue  # a non-tensor input, which the graph holds as a constant
        if kind == "USER_INPUT":
            tensor = next(user_inputs)
            entry = {"name": node.name, "dtype": DTYPES[tensor.dtype], "shape": list(tensor.shape)}
            origin = origins.origin(tensor)
            init = input_init(origin[0], tensor.dtype) if origin else None
            if init is not None:
                entry["init"] = init
            if origin and origin[2]:
                derived[node.name] = origin[1]
            program["inputs"].append(entry)
        elif kind in ("PARAMETER", "BUFFER", "CONSTANT_TENSOR"):
            value = state[spec.target] if kind != "CONSTANT_TENSOR" else exported.constants[spec.target]
            weights[spec.target] = value.detach().contiguous().clone()
            program["params"].append({"name": node.name, "dtype": DTYPES[value.dtype], "shape": list(value.shape),
                                      "init": {"file": {"path": params_path, "key": spec.target}}})
        else:
            raise Unsupported(f"input {node.name}: exported as {kind}, which a task cannot take")
    for node in exported.graph.nodes:
        if node.op == "call_function":
            translator.call(node)
        elif node.op == "output":
            for spec, value in zip(exported.graph_signature.output_specs, node.args[0]):
                kind = spec.kind.name
                if kind in ("BUFFER_MUTATION", "USER_INPUT_MUTATION"):
                    state_updates.append(spec.target)  # seen only by a later call: one call from the initial state
                    continue
                if kind != "USER_OUTPUT":
                    raise Unsupported(f"forward returns {kind}, which a task cannot express")
                if not isinstance(value, torch.fx.Node):
                    raise Unsupported(f"forward returns {value!r}, not a tensor")
                program["outputs"].append(translator.refs[value].removeprefix("%"))
    program["nodes"] = translator.nodes
    Path(args.params_dir).mkdir(parents=True, exist_ok=True)
    save_file(weights, params_path)
    record = {"kind": "task", "id": problem_id(level, Path(path).stem), "source": "kernelbench", "level": level,
              "name": Path(path).stem, "file": str(path), "scale": scale, "program": program}
    if derived:
        record["derived_inputs"] = derived
    if state_updates:
        record["state_updates"] = state_updates
    return record


def problem_files(directory):
    def number(path):
        match = re.match(r"(\d+)_", path.name)
        return (int(match.group(1)) if match else sys.maxsize, path.name)
    return sorted(Path(directory).glob("*.py"), key=number)


def level_of(directory):
    match = re.fullmatch(r"level(\d+)", Path(directory).resolve().name)
    return int(match.group(1)) if match else None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dirs", nargs="+")
    parser.add_argument("--params-dir", required=True)
    parser.add_argument("--scale", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip", help="file of problem paths (one a line) a run cut short finished: each gives only "
                        '{"kind": "skipped", "file": PATH} in its place (ca-crawl kernelbench --resume)')
    args = parser.parse_args()
    if args.scale < 1:
        parser.error("--scale must be >= 1")
    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)  # building models only; ca-crawl runs beside it
    done = set(Path(args.skip).read_text().splitlines()) if args.skip else set()
    for directory in args.dirs:
        level = level_of(directory)
        for path in problem_files(directory):
            if str(path) in done:
                print(json.dumps({"kind": "skipped", "file": str(path)}), flush=True)
                continue
            try:
                record = import_at_largest_scale(path, level, args)
            except Exception as error:  # any failure becomes the problem's record, and the run goes on
                message = f"{type(error).__name__}: {error}".strip().splitlines()[0][:500]
                if not isinstance(error, Unsupported):
                    print(f"import_kernelbench.py: {path}: {traceback.format_exc().strip().splitlines()[-1]}", file=sys.stderr)
                record = {"kind": "import_error", "id": problem_id(level, path.stem), "source": "kernelbench",
                          "level": level, "name": path.stem, "file": str(path), "scale": args.scale, "error": message,
                          "stage": getattr(error, "import_stage", "unsupported")}
            print(json.dumps(record), flush=True)


if __name__ == "__main__":
    try:
        main()
    except Exception as error:  # the one place errors become a message and exit 1
        print(f"import_kernelbench.py: error: {type(error).__name__}: {error}", file=sys.stderr)
        sys.exit(1)
