"""The sandboxed side of a KernelBench-format judgement (docs/EVAL.md, "KernelBench-format solutions").

Runs inside bubblewrap, started by modelnew_judge.py, and serves one model: a solution's ModelNew or the task's
reference Model (the eager and torch.compile baselines, timed by the same protocol). It never sees a seed of an
input: the trusted judge sends each call's inputs as bytes. Messages on stdin, replies on a private copy of stdout
(fd 1 itself goes to stderr before any solution code runs, so a print cannot break the protocol): a JSON header
line, then the raw bytes of the tensors it lists ({"dtype", "shape", "nbytes"}, in order).

Requests: load {path, kind: solution|reference, bridge, scale, device, compile, tf32, flush_bytes}; construct {seed, init};
inputs {args: [{"tensor": i} | {"value": v}], tensors}; run; fetch; ping. Each reply is {"ok": true, ...} or
{"ok": false, "error": "..."}; the process ends at the end of stdin.
"""
import json
import os
import sys
import traceback
import types
from pathlib import Path

import torch

DTYPES = {"float32": torch.float32, "float64": torch.float64, "float16": torch.float16,
          "bfloat16": torch.bfloat16, "int64": torch.int64, "int32": torch.int32, "int16": torch.int16,
          "int8": torch.int8, "uint8": torch.uint8, "bool": torch.bool}
NAMES = {dtype: name for name, dtype in DTYPES.items()}


def read_exact(stream, n):
    data = stream.read(n)
    if data is None or len(data) != n:
        raise EOFError("the judge closed the pipe")
    return data


def tensor_bytes(tensor):
    tensor = tensor.detach().to("cpu").contiguous()
    # bool and the 16-bit floats have no numpy view everywhere; their bytes through uint8.
    return tensor.view(torch.uint8).numpy().tobytes() if tensor.numel() else b""


class Server:
    def __init__(self, out):
        self.out = out
        self.cls = None
        self.model = None
        self.inputs = []
        self.outputs = None
        self.device = "cpu"
        self.flush_buffer = None
        self.flush_value = 0
        self.compile = False

    def reply(self, header, tensors=()):
        header = dict(header, tensors=[{"dtype": NAMES.get(t.dtype, str(t.dtype)), "shape": list(t.shape),
                                        "nbytes": t.numel() * t.element_size()} for t in tensors])
        payload = [tensor_bytes(t) for t in tensors]
        self.out.write(json.dumps(header).encode() + b"\n")
        for data in payload:
            self.out.write(data)
        self.out.flush()

    def sync(self):
        if self.device.startswith("cuda"):
            torch.cuda.synchronize()

    def flush_cache(self):
        """TIMING.md's prepare: a buffer of twice the last-level cache written with a new value each time."""
        self.flush_value = (self.flush_value + 1) % 251
        self.flush_buffer.fill_(self.flush_value)
        self.sync()

    def load(self, request):
        self.device = request["device"]
        self.compile = request.get("compile", False)
        if not self.device.startswith("cuda"):
            torch.set_num_threads(1)  # ca-profile's default: eager and candidates on one intra-op thread
        # ca-profile's --tf32 modes: (matmul, cudnn) TF32 flags; pytorch is PyTorch's own defaults.
        tf32 = {"none": (False, False), "pytorch": (False, True), "all": (True, True)}[request.get("tf32", "pytorch")]
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = tf32
        path = request["path"]
        if request["kind"] == "reference":
            sys.path.insert(0, request["bridge"])
            from import_kernelbench import load_problem
            self.cls = load_problem(path, request.get("scale", 1)).Model
        else:
            module = types.ModuleType("solution")
            module.__file__ = path
            sys.modules["solution"] = module
            exec(compile(Path(path).read_text(), path, "exec"), module.__dict__)
            if not isinstance(getattr(module, "ModelNew", None), type):
                raise RuntimeError("the solution defines no class ModelNew")
            self.cls = module.ModelNew
        if self.device.startswith("cuda"):
            size = 2 * torch.cuda.get_device_properties(torch.device(self.device)).L2_cache_size
        else:  # the judge's figure: sysfs is not mounted in the sandbox
            size = request.get("flush_bytes") or 2 * last_level_cache_bytes()
        self.flush_buffer = torch.empty(size, dtype=torch.uint8, device=self.device)
        return {}

    def construct(self, request):
        torch.manual_seed(request["seed"])
        model = self.cls(*request["init"])
        if isinstance(model, torch.nn.Module):
            model = model.to(self.device).eval()
        self.model = torch.compile(model) if self.compile else model
        self.inputs, self.outputs = [], None
        return {}

    def set_inputs(self, request, tensors):
        args = []
        for arg in request["args"]:
            args.append(tensors[arg["tensor"]].to(self.device) if "tensor" in arg else arg["value"])
        self.inputs, self.outputs = args, None
        self.flush_cache()
        return {}

    def run(self, _request):
        with torch.no_grad():
            self.outputs = self.model(*self.inputs)
        self.sync()
        return {}

    def fetch(self, _request):
        outputs = self.outputs
        many = isinstance(outputs, (tuple, list))
        items = list(outputs) if many else [outputs]
        if not all(isinstance(item, torch.Tensor) for item in items):
            raise RuntimeError("forward returned " + ", ".join(type(item).__name__ for item in items) +
                               ", not tensors")
        return {"many": many}, items


def last_level_cache_bytes():
    """cpu0's last-level cache from sysfs (one core's view), 32 MiB when it cannot be read, as TIMING.md says."""
    best = 0
    for index in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*"):
        try:
            text = (index / "size").read_text().strip()
            best = max(best, int(text[:-1]) * 1024 if text.endswith("K") else
                       int(text[:-1]) << 20 if text.endswith("M") else int(text))
        except (OSError, ValueError):
            continue
    return best or 32 << 20


def main():
    # The protocol's stdout is a private descriptor; fd 1 (print, C++ std::cout) goes to stderr.
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    stdin = sys.stdin.buffer
    server = Server(out)
    while True:
        line = stdin.readline()
        if not line:
            return
        request = json.loads(line)
        tensors = []
        for spec in request.get("tensors", []):
            data = bytearray(read_exact(stdin, spec["nbytes"]))
            dtype = DTYPES[spec["dtype"]]
            flat = torch.frombuffer(data, dtype=torch.uint8) if data else torch.empty(0, dtype=torch.uint8)
            tensors.append(flat.view(dtype).reshape(spec["shape"]))
        try:
            op = request["op"]
            if op == "load":
                result = server.load(request)
            elif op == "construct":
                result = server.construct(request)
            elif op == "inputs":
                result = server.set_inputs(request, tensors)
            elif op == "run":
                result = server.run(request)
            elif op == "fetch":
                header, items = server.fetch(request)
                server.reply(dict(header, ok=True), items)
                continue
            elif op == "ping":
                server.sync()
                result = {}
            else:
                raise RuntimeError("unknown request " + op)
            server.reply(dict(result, ok=True))
        except Exception as error:  # the solution's own failure, reported to the judge
            traceback.print_exc()
            message = f"{type(error).__name__}: {error}".strip()
            server.reply({"ok": False, "error": message[:2000]})


if __name__ == "__main__":
    main()
