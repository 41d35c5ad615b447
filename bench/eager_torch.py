"""PyTorch eager's time for each task program, taken with ca-profile's procedure for its eager baseline
(time_in_process in common/torch/profile.cpp, the clocks of common/timing/clock.h), step for step:

- the program's ops are resolved and their arguments bound once, before any timing, as the C++
  interpreter binds them (Interpreter::create); a timed call only calls the op overloads, one Python
  statement each. Interpreting the JSON inside the timed region, as the bridge's Program.forward does,
  added 7-25 us of Python to every call when the device clock still counted the launch (bench/RESULTS.md);
- rounds (5 by default), the first call of each untimed; round 1 has 2 timed calls, later rounds as many as
  make --min-ms over them, at most 200 and at most 512 MiB of outputs;
- each call: the previous call's tensors freed, inputs and params drawn fresh from the distributions the
  program names (docs/IR.md; the harness's distributions, not its bytes), cache flushed by writing twice its
  size (L2 on cuda, cpu0's last-level cache on cpu) and the device idle, then the device clock (CUDA events
  on the current stream, behind a 50 us hold of the device, so the launch is not counted: a one-thread sleep
  here, where C++ fills every SM) and the host clock (to a device-wide sync, less the hold); the host clock
  counts where it is slower by more than 20 us + 20%;
- the outputs are held until the clocks stop, then cloned (the copies kept until the round ends, where
  ca-profile compares them) and freed, as ca-profile frees them;
- grad mode as in C++ (on; nothing requires grad), the intra-op threads of --threads;
- cpu: ATen's CPU tensors come from ca-profile's caching allocator (common/torch/cpu_caching_allocator.h, loaded
  from the shared library of target ca_cpu_allocator, --cpu-allocator), so outputs land on memory earlier calls
  freed and no timed call pays for fresh pages; with glibc's allocator some calls do and some do not
  (bench/RESULTS.md). On cuda both sides use PyTorch's caching allocator already.

- TF32: --tf32 as ca-profile's (none, pytorch: PyTorch's own defaults, all), set on torch.backends before any
  call; cuda only.

Prints one JSON line per task: {"id", "eager_us", "count", "tf32"}, tf32 the mode read back from torch.backends.

    python eager_torch.py TASKS.jsonl --device cpu|cuda [--min-ms 100] [--rounds 5] [--threads 1] [--tf32 pytorch]
                          [--cpu-allocator build/lib/libca_cpu_allocator.so | none]
"""
import argparse
import ctypes
import json
import math
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bridge"))
from compile_task import DTYPES, TF32_MODES, convert, fixed_list, resolve_op  # noqa: E402  the bridge's reading of the IR

ROUND_OUTPUT_BYTES = 512 << 20  # k_round_output_bytes
MAX_CALLS = 200  # ca-profile --max-calls
DEFAULT_CPU_ALLOCATOR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "lib",
                                     "libca_cpu_allocator.so")


def is_ref(value):
    return isinstance(value, str) and value.startswith("%") and not value.startswith("%%")


def has_ref(value):
    return is_ref(value) or (isinstance(value, list) and any(has_ref(v) for v in value))


def bind(program, device):
    """The program as one Python function of its inputs then params, bound once as Interpreter::create binds its
    nodes: ops resolved, constant arguments converted, refs turned into local variables, so that a call does
    nothing but call the op overloads (through their C++ callable: OpOverload.__call__ adds a Python frame)."""
    names = [t["name"] for t in program.get("inputs", []) + program.get("params", [])]
    local = {name: f"t{i}" for i, name in enumerate(names)}
    constants = {}

    def constant(value):
        key = f"c{len(constants)}"
        constants[key] = value
        return key

    def ref(text):
        name, _, index = text.lstrip("%").partition("[")
        return local[name] + (f"[{int(index[:-1])}]" if index else "")

    def expression(value, type_name):
        if is_ref(value):
            return ref(value)
        if isinstance(value, list) and has_ref(value):
            element = type_name[:-2] if type_name.endswith("[]") else type_name
            return "[" + ", ".join(expression(v, element) for v in value) + "]"
        return constant(convert(value, type_name, {}, device))

    lines = [f"def run({', '.join(local[n] for n in names)}):"]
    for node in program["nodes"]:
        op = resolve_op(node["op"])
        schema = op._schema.arguments
        by_name = {a.name: a for a in schema}
        args = [expression(fixed_list(v, schema[i]), str(schema[i].type)) for i, v in enumerate(node.get("args", []))]
        args += [f"{k}={expression(fixed_list(v, by_name[k]), str(by_name[k].type))}"
                 for k, v in node.get("kwargs", {}).items()]
        args += [f"{a.name}={constant(device)}" for a in schema[len(node.get("args", [])):]
                 if "Device" in str(a.type) and a.name not in node.get("kwargs", {})]
        for out in node["out"]:
            local[out] = f"v{len(local)}"
        targets = ", ".join(local[out] for out in node["out"])
        lines.append(f"    {targets} = {constant(getattr(op, '_op', op))}({', '.join(args)})")
    lines.append(f"    return [{', '.join(ref(name) for name in program['outputs'])}]")
    namespace = dict(constants)
    exec("\n".join(lines), namespace)  # noqa: S102  source built above from the program's own names
    return lambda tensors: namespace["run"](*tensors)


def kaiming_bound(shape):
    # common/ir/tensor_init.cpp kaiming_bound: 1/sqrt(fan_in), as a float32.
    fan_in = shape[0] if len(shape) == 1 else math.prod(shape[1:])
    return float(torch.tensor(1.0 / math.sqrt(fan_in), dtype=torch.float32)) if fan_in > 0 else 0.0


def draw(spec, device):
    """One tensor from the distribution its spec names, with the defaults of common/ir/program.cpp (randn for
    float inputs, kaiming_uniform for float params, randint [0, 10) for integers, [0, 2) for bool)."""
    dtype, shape = DTYPES[spec["dtype"]], spec["shape"]
    init = spec.get("init")
    if init is None:
        init = ("kaiming_uniform" if spec["is_param"] else "randn") if dtype.is_floating_point else \
            {"randint": [0, 2 if dtype == torch.bool else 10]}
    name, numbers = (init, []) if isinstance(init, str) else next(iter(init.items()))
    if name == "file":
        import safetensors.torch
        return safetensors.torch.load_file(numbers["path"])[numbers["key"]].to(device)
    numbers = numbers if isinstance(numbers, list) else [numbers]
    empty = lambda: torch.empty(shape, dtype=dtype, device=device)  # noqa: E731
    if name == "rand":
        return torch.rand(shape, dtype=dtype, device=device)
    if name == "randn":
        return torch.randn(shape, dtype=dtype, device=device)
    if name == "uniform":
        return empty().uniform_(*numbers)
    if name == "normal":
        return empty().normal_(*numbers)
    if name == "kaiming_uniform":
        bound = kaiming_bound(shape)
        return empty().uniform_(-bound, bound)
    if name in ("ones", "zeros"):
        return torch.full(shape, 1 if name == "ones" else 0, dtype=dtype, device=device)
    if name == "constant":  # integer tensors truncate the value, as the harness does
        return torch.full(shape, numbers[0] if dtype.is_floating_point else int(numbers[0]), dtype=dtype, device=device)
    if name == "randint":
        low = math.floor(numbers[0]) if dtype.is_floating_point else math.ceil(numbers[0])
        high = max(low + 1, math.ceil(numbers[1]))
        return torch.randint(low, high, shape, device=device).to(dtype)
    raise ValueError(f"unknown init {init!r}")


def fresh_inputs(program, device):
    specs = [dict(s, is_param=False) for s in program.get("inputs", [])] + \
            [dict(s, is_param=True) for s in program.get("params", [])]
    return [draw(spec, device) for spec in specs]


def last_level_cache_bytes():
    # cpu0's last-level cache, as common/timing/clock.cpp reads it.
    for index in (3, 2):
        path = f"/sys/devices/system/cpu/cpu0/cache/index{index}/size"
        if os.path.exists(path):
            text = open(path).read().strip()
            unit = {"K": 1 << 10, "M": 1 << 20}.get(text[-1], 1)
            return int(text.rstrip("KM")) * unit
    return 32 << 20


def counted(device_us, host_us):
    return host_us if host_us > device_us * 1.2 + 20.0 else device_us


HOLD_US = 50.0  # k_hold_us of common/timing/clock.h


def sleep_cycles_per_us():
    """torch.cuda._sleep's cycles a microsecond on this device: the fastest of a few timed million-cycle sleeps."""
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    rates = []
    for _ in range(5):
        start.record()
        torch.cuda._sleep(1_000_000)
        stop.record()
        stop.synchronize()
        rates.append(1_000_000 / (start.elapsed_time(stop) * 1000))
    return max(rates)


class Clock:
    """CallClock of common/timing/clock.cpp: prepare() flushes and waits, start(), stop() -> (device_us, host_us)."""

    def __init__(self, device):
        self.cuda = device == "cuda"
        size = torch.cuda.get_device_properties(0).L2_cache_size if self.cuda else last_level_cache_bytes()
        self.flush = torch.empty(2 * max(size, 1 << 20) if self.cuda else 2 * size, dtype=torch.uint8, device=device)
        self.round = 0
        if self.cuda:
            self.events = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            self.hold_cycles = int(HOLD_US * sleep_cycles_per_us())

    def prepare(self):
        self.round = (self.round + 1) % 256  # a new value each time
        self.flush.fill_(self.round)
        if self.cuda:
            torch.cuda.synchronize()

    def start(self):
        self.host = time.perf_counter()
        if self.cuda:
            torch.cuda._sleep(self.hold_cycles)
            self.events[0].record()

    def stop(self):
        if self.cuda:
            self.events[1].record()
            torch.cuda.synchronize()  # device-wide
        host_us = (time.perf_counter() - self.host) * 1e6
        if self.cuda:
            host_us = max(0.0, host_us - HOLD_US)
        device_us = self.events[0].elapsed_time(self.events[1]) * 1000 if self.cuda else host_us
        return device_us, host_us


def time_round(run, program, calls, device, clock):
    """time_in_process: calls + 1 calls, the first untimed; returns the times and the kept copies of the outputs."""
    times, kept = [], []
    for i in range(calls + 1):
        inputs = fresh_inputs(program, device)
        clock.prepare()
        clock.start()
        outputs = run(inputs)
        device_us, host_us = clock.stop()
        if i > 0:
            times.append(counted(device_us, host_us))
        kept.append([output.clone() for output in outputs])
        del outputs, inputs
    return times, kept


def time_program(program, device, min_ms, rounds):
    run = bind(program, torch.device(device))
    clock = Clock(device)
    times, calls = [], 2
    for round_index in range(rounds):
        timed, kept = time_round(run, program, calls, device, clock)
        times += timed
        if round_index == 0 and rounds > 1:
            # ca-profile sizes by the slower of candidate and eager; there is no candidate here.
            output_bytes = sum(t.numel() * t.element_size() for t in kept[0])
            per_round = min_ms * 1000.0 / (rounds - 1)
            by_memory = ROUND_OUTPUT_BYTES / max(1.0, output_bytes)
            calls = max(2, min(int(min(math.ceil(per_round / max(statistics.median(times), 1.0)), by_memory)), MAX_CALLS))
        del kept  # ca-profile holds a round's copies until its checks, then drops them
    return statistics.median(times), len(times)


def install_cpu_allocator(path):
    """Makes ca-profile's caching allocator ATen's CPU allocator in this process, and checks that torch's tensors
    come from it (the library must bind the libc10 this torch loaded)."""
    library = ctypes.CDLL(path)
    library.ca_cpu_caching_allocator_live_bytes.restype = ctypes.c_size_t
    if library.ca_install_cpu_caching_allocator() != 0:
        sys.exit(f"eager_torch.py: {path}: c10 kept another CPU allocator")
    before = library.ca_cpu_caching_allocator_live_bytes()
    probe = torch.empty(1 << 20, dtype=torch.uint8)
    if library.ca_cpu_caching_allocator_live_bytes() < before + probe.numel():
        sys.exit(f"eager_torch.py: {path}: installed, but torch does not allocate through it (another libc10?)")
    del probe


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tasks")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--min-ms", type=float, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--cpu-allocator", default=os.environ.get("CA_CPU_ALLOCATOR", DEFAULT_CPU_ALLOCATOR),
                        help="cpu: the ca_cpu_allocator shared library ($CA_CPU_ALLOCATOR, default: the build tree's), "
                             "or none for glibc's allocator (not what ca-profile times with)")
    parser.add_argument("--tf32", default="pytorch", choices=list(TF32_MODES),
                        help="TF32 mode of the baseline, as ca-profile --tf32 (default: pytorch, PyTorch's defaults)")
    args = parser.parse_args()
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = TF32_MODES[args.tf32]
    flags = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    tf32 = next(name for name, mode in TF32_MODES.items() if mode == flags)
    if args.device == "cpu" and args.cpu_allocator != "none":
        if not os.path.exists(args.cpu_allocator):
            sys.exit(f"eager_torch.py: {args.cpu_allocator}: no such file; build the ca_cpu_allocator target or pass "
                     "--cpu-allocator PATH (none: glibc's allocator)")
        install_cpu_allocator(args.cpu_allocator)
    torch.set_num_threads(args.threads)
    for line in open(args.tasks):
        task = json.loads(line)
        median, count = time_program(task["program"], args.device, args.min_ms, args.rounds)
        print(json.dumps({"id": task["id"], "eager_us": round(median, 3), "count": count, "tf32": tf32}), flush=True)


if __name__ == "__main__":
    main()
