#!/usr/bin/env python3
"""Whether a GPU kernel's median moves between processes with no harness around it (bench/RESULTS.md, session 7).

The bench's gemm median moved 3-5% between profiles while the clocks held, one state per process. This times the
same gemm (bench/l2_gemm_leaky_relu's 1024 x 4096 x 4096 linear) in plain PyTorch, in PROCS fresh processes per
variant, interleaved so that drift over time falls on every variant alike:

  write  the L2 flushed by writing twice its size before each call (what ca-profile does)
  read   flushed by reading it instead, so no dirty line is written back inside the timed call
  none   no flush
  fresh  as write, with inputs in freshly allocated buffers every call (as the runner gives the candidate)
  moved  as write, with the flush buffer itself freshly allocated every call (ca-profile allocates it once)
  sets   as write, with the calls taken in turn by 4 sets of inputs allocated up front: each set's median is printed
         before the process's, so a mode that follows where the buffers lie shows within one process
  blocked as write, with a spin kernel queued after the flush and before the start event, so that the host's launch
         of the call happens while the device is busy (nvbench's blocking kernel): a launch gap no longer counts
  near   as write, with the process held to the CPUs local to the GPU (its PCI device's local_cpulist)
  pair   calls alternate between one fixed set of inputs and fresh ones kept allocated (the runner's way); prints
         both medians for every 16 calls of each, so a slow stretch shows whether it follows time (both) or the
         fresh buffers' memory (fresh only)

Each process prints its median; the table gives each variant's medians and their spread, (max - min) / median.
Usage: bench/spread_probe.py [--procs 6] [--calls 60] [--variants write,read,none,fresh,moved] (the default set;
sets, blocked, near and pair: ask for them)
"""
import argparse
import os
import statistics
import subprocess
import sys


def local_cpus() -> set:
    """The CPUs sysfs lists as local to GPU 0's PCI device."""
    bus_id = subprocess.run(["nvidia-smi", "-i", "0", "--query-gpu=pci.bus_id", "--format=csv,noheader"],
                            capture_output=True, text=True, check=True).stdout.strip().lower()
    with open(f"/sys/bus/pci/devices/{bus_id[4:]}/local_cpulist") as f:  # nvidia-smi writes an 8-digit domain
        ranges = [part.split("-") for part in f.read().strip().split(",")]
    return {cpu for r in ranges for cpu in range(int(r[0]), int(r[-1]) + 1)}


def child(variant: str, calls: int) -> None:
    if variant == "near":
        os.sched_setaffinity(0, local_cpus())
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    device = torch.device("cuda")
    sets = [(torch.rand(1024, 4096, device=device), torch.rand(4096, 4096, device=device))
            for _ in range(4 if variant == "sets" else 2 if variant == "pair" else 1)]
    flush = torch.empty(2 * torch.cuda.get_device_properties(0).L2_cache_size // 4, device=device)
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    kept = []  # fresh, moved: earlier calls' buffers stay allocated, so every call's are new
    times = [[] for _ in sets]  # per input set
    for i in range(calls + 5):
        x, w = sets[i % len(sets)]
        if variant == "fresh" or (variant == "pair" and i % 2 == 1):
            x, w = torch.rand(1024, 4096, device=device), torch.rand(4096, 4096, device=device)
            kept.append((x, w))
        if variant == "moved":
            kept.append(flush)
            flush = torch.empty_like(flush)
        torch.cuda.synchronize()
        if variant in ("write", "fresh", "moved", "sets", "pair", "blocked", "near"):
            flush.zero_()
        elif variant == "read":
            flush.sum()
        if variant == "blocked":
            torch.cuda._sleep(1_000_000)  # about 0.5 ms at 1980 MHz, longer than the launch below takes
        else:
            torch.cuda.synchronize()
        start.record()
        torch.nn.functional.linear(x, w)
        stop.record()
        stop.synchronize()
        if i >= 5:
            times[i % len(sets)].append(start.elapsed_time(stop) * 1000.0)
    if variant == "sets":
        print("sets " + " ".join(f"{statistics.median(t):.1f}" for t in times))
    if variant == "pair":  # times[0]: the fixed set's calls, times[1]: the fresh ones'
        blocks = [(statistics.median(times[0][b:b + 16]), statistics.median(times[1][b:b + 16]))
                  for b in range(0, min(map(len, times)) - 15, 16)]
        print("sets fixed/fresh every 16 calls: " + " ".join(f"{a:.0f}/{b:.0f}" for a, b in blocks))
    print(f"{statistics.median([t for per_set in times for t in per_set]):.2f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--procs", type=int, default=6)
    parser.add_argument("--calls", type=int, default=60)
    parser.add_argument("--variants", default="write,read,none,fresh,moved")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.calls)
        return 0
    variants = args.variants.split(",")
    if "near" in variants:
        print(f"CPUs local to GPU 0: {sorted(local_cpus())} of {os.cpu_count()}")
    medians = {v: [] for v in variants}
    for _ in range(args.procs):
        for variant in variants:
            out = subprocess.run([sys.executable, __file__, "--child", variant, "--calls", str(args.calls)],
                                 capture_output=True, text=True)
            if out.returncode != 0:
                print(f"spread_probe: error: {variant}: {out.stderr.strip()[-300:]}", file=sys.stderr)
                return 1
            *per_set, median = out.stdout.splitlines()
            medians[variant].append(float(median))
            for line in per_set:
                print(f"{variant}: per set {line.removeprefix('sets ')}, process {medians[variant][-1]:.1f}")
    print("| variant | median us per process | spread |")
    print("|---|---|---|")
    for variant, values in medians.items():
        spread = (max(values) - min(values)) / statistics.median(values)
        print(f"| {variant} | {' '.join(f'{v:.1f}' for v in values)} | {100 * spread:.2f}% |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
