"""PyTorch eager's time for each task program, taken with ca-profile's method
(common/timing/clock.h): cache flushed by writing twice its size and the device
idle before each call, fresh inputs every call, device clock (CUDA events) and
host clock to a device-wide sync, the host clock where it is slower by more than
20 us + 20%, first call untimed, median. Prints one JSON line per task:
{"id", "eager_us", "count"}.

    python eager_torch.py TASKS.jsonl --device cpu|cuda [--min-ms 100] [--threads 1]
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bridge"))
from compile_task import DTYPES, Program  # noqa: E402  the bridge's IR runner: torch.ops, as eager runs them


def fresh_inputs(program, device):
    tensors = []
    for spec in program.get("inputs", []) + program.get("params", []):
        dtype = DTYPES[spec["dtype"]]
        if dtype.is_floating_point:
            tensors.append(torch.rand(spec["shape"], dtype=dtype, device=device))
        else:
            tensors.append(torch.randint(0, 2, spec["shape"], device=device).to(dtype))
    return tensors


def last_level_cache_bytes():
    # cpu0's last-level cache, as common/timing/clock.cpp reads it.
    for index in (3, 2):
        path = f"/sys/devices/system/cpu/cpu0/cache/index{index}/size"
        if os.path.exists(path):
            text = open(path).read().strip()
            return int(text[:-1]) * 1024 if text.endswith("K") else int(text)
    return 32 << 20


def counted(device_us, host_us):
    return host_us if host_us > device_us * 1.2 + 20.0 else device_us


def time_program(program, device, min_ms):
    module = Program(program, torch.device(device))
    cuda = device == "cuda"
    if cuda:
        flush = torch.empty(2 * torch.cuda.get_device_properties(0).L2_cache_size, dtype=torch.uint8, device=device)
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    else:
        flush = torch.empty(2 * last_level_cache_bytes(), dtype=torch.uint8)
    times = []
    calls = 0
    while sum(times) < min_ms * 1000 or len(times) < 5:
        inputs = fresh_inputs(program, device)
        flush.fill_(calls % 256)
        if cuda:
            torch.cuda.synchronize()
        host = time.perf_counter()
        if cuda:
            start.record()
        with torch.no_grad():
            module(*inputs)
        if cuda:
            stop.record()
            torch.cuda.synchronize()
        host_us = (time.perf_counter() - host) * 1e6
        device_us = start.elapsed_time(stop) * 1000 if cuda else host_us
        if calls > 0:
            times.append(counted(device_us, host_us))
        calls += 1
    return statistics.median(times), len(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tasks")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--min-ms", type=float, default=100)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    for line in open(args.tasks):
        task = json.loads(line)
        median, count = time_program(task["program"], args.device, args.min_ms)
        print(json.dumps({"id": task["id"], "eager_us": round(median, 3), "count": count}), flush=True)


if __name__ == "__main__":
    main()
