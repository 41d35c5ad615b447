"""Imports a KernelBench-style model.py (class Model, get_inputs,
get_init_inputs) into a task record through torch.export, for ca-synth's LLM
mode. The KernelBench importer (ca-crawl kernelbench) does the same for the
benchmark's own files; this script stays small on purpose and can hand over
to it.

    python import_model.py MODEL.py --id ID [--source llm]

Prints one task record {kind, id, source, program, seed}. Parameters and
buffers become program params whose init is the tensor's constant value when
it has one (LayerNorm weights: ones) and the IR's default otherwise: the
model's own random weights do not travel. Errors go to stderr, exit 1.
"""
import argparse
import importlib.util
import json
import math
import operator
import sys

import torch

DTYPES = {torch.float32: "float32", torch.float64: "float64", torch.float16: "float16", torch.bfloat16: "bfloat16",
          torch.int64: "int64", torch.int32: "int32", torch.int16: "int16", torch.int8: "int8", torch.uint8: "uint8",
          torch.bool: "bool"}
MEMORY_FORMATS = {torch.contiguous_format: "contiguous_format", torch.preserve_format: "preserve_format",
                  torch.channels_last: "channels_last", torch.channels_last_3d: "channels_last_3d"}


class ModelError(Exception):
    pass


def load_module(path):
    spec = importlib.util.spec_from_file_location("model", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for name in ("Model", "get_inputs", "get_init_inputs"):
        if not hasattr(module, name):
            raise ModelError(f"model.py defines no {name}")
    return module


def dtype_name(dtype):
    if dtype not in DTYPES:
        raise ModelError(f"dtype {dtype} has no IR name")
    return DTYPES[dtype]


def tensor_spec(name, tensor, is_param):
    """The IR tensor for an input or param; values become an init, not data."""
    spec = {"name": name, "dtype": dtype_name(tensor.dtype), "shape": list(tensor.shape)}
    flat = tensor.detach().reshape(-1)
    if flat.numel() > 0 and bool((flat == flat[0]).all()):
        value = flat[0].item()
        spec["init"] = "ones" if value == 1 else "zeros" if value == 0 else {"constant": value}
    elif not tensor.is_floating_point():
        spec["init"] = {"randint": [0, 2]} if tensor.dtype == torch.bool else {"randint": [0, 10]}
    elif not is_param:
        spec["init"] = "randn"
    return spec


class Converter:
    """FX nodes of an exported program as IR nodes."""

    def __init__(self):
        self.names = {}  # fx node -> its reference without '%': "x", "parts[1]", "max_1_0"

    def literal(self, value):
        if isinstance(value, torch.fx.Node):
            return "%" + self.names[value]
        if isinstance(value, (list, tuple)):
            return [self.literal(v) for v in value]
        if value is None or isinstance(value, (bool, int)):
            return value
        if isinstance(value, float):
            if not math.isfinite(value):
                raise ModelError(f"non-finite literal {value}")
            return value
        if isinstance(value, str):
            return "%" + value if value.startswith("%") else value
        if isinstance(value, torch.dtype):
            return dtype_name(value)
        if isinstance(value, torch.memory_format):
            return MEMORY_FORMATS[value]
        if isinstance(value, torch.layout):
            return "strided"
        if isinstance(value, torch.device):
            return None
        raise ModelError(f"literal of type {type(value).__name__} has no IR form")

    def node(self, fx_node):
        """The IR node, or None for getitem (which only names an element)."""
        target = fx_node.target
        if target is operator.getitem:
            source, index = fx_node.args
            base = self.names[source]
            self.names[fx_node] = f"{base}[{index}]" if source.meta.get("ca_list") else f"{base}_{index}"
            return None
        if not isinstance(target, torch._ops.OpOverload):
            raise ModelError(f"{fx_node.name}: {target} is not an ATen operator")
        schema = target._schema
        if schema.is_mutable:
            raise ModelError(f"{fx_node.name}: {schema.name} writes to its arguments")
        overload = "" if target._overloadname == "default" else "." + target._overloadname
        node = {"op": schema.name + overload, "args": [self.literal(a) for a in fx_node.args]}
        if fx_node.kwargs:
            node["kwargs"] = {k: self.literal(v) for k, v in fx_node.kwargs.items()}
        returns = schema.returns
        # One return: one name (a list result is indexed); several: one name each.
        node["out"] = [fx_node.name] if len(returns) == 1 else [f"{fx_node.name}_{k}" for k in range(len(returns))]
        fx_node.meta["ca_list"] = len(returns) == 1 and str(returns[0].type).startswith("List")
        self.names[fx_node] = fx_node.name
        return node


def import_model(path):
    module = load_module(path)
    torch.manual_seed(0)
    model = module.Model(*module.get_init_inputs()).eval()
    inputs = tuple(module.get_inputs())
    exported = torch.export.export(model, inputs)
    if any(isinstance(n.target, torch._ops.OpOverload) and n.target._schema.is_mutable for n in exported.graph.nodes):
        exported = exported.run_decompositions({})  # functionalizes in-place ops
    state = {**exported.state_dict, **exported.constants}
    specs = {spec.arg.name: spec for spec in exported.graph_signature.input_specs}
    program = {"inputs": [], "params": [], "nodes": [], "outputs": []}
    converter = Converter()
    user_inputs = iter(inputs)
    for fx_node in exported.graph.nodes:
        if fx_node.op == "placeholder":
            spec = specs[fx_node.name]
            if spec.kind == torch.export.graph_signature.InputKind.USER_INPUT:
                tensor = next(user_inputs)
                if not isinstance(tensor, torch.Tensor):
                    raise ModelError(f"input {fx_node.name} is not a tensor")
                program["inputs"].append(tensor_spec(fx_node.name, tensor, False))
            else:
                program["params"].append(tensor_spec(fx_node.name, state[spec.target], True))
            converter.names[fx_node] = fx_node.name
        elif fx_node.op == "call_function":
            node = converter.node(fx_node)
            if node:
                program["nodes"].append(node)
        elif fx_node.op == "output":
            outputs = fx_node.args[0]
            outputs = outputs if isinstance(outputs, (list, tuple)) else [outputs]
            program["outputs"] = [converter.literal(o)[1:] for o in outputs]
    return program


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("--id", required=True)
    parser.add_argument("--source", default="llm")
    args = parser.parse_args()
    try:
        program = import_model(args.model)
    except Exception as error:  # whatever the model file does wrong is one line on stderr
        message = str(error).splitlines()[0] if str(error) else ""
        print(f"import_model.py: error: {args.model}: {type(error).__name__}: {message}", file=sys.stderr)
        return 1
    print(json.dumps({"kind": "task", "id": args.id, "source": args.source, "program": program, "seed": 0}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
