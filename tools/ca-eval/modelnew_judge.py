"""The trusted side of a KernelBench-format judgement (docs/EVAL.md, "KernelBench-format solutions").

ca-eval run --modelnew starts this once per task with a request (a JSON file, the one argument): the task record, the solution
file, the sandbox's command line (bubblewrap arguments built by ca-eval from common/sandbox, ending in the
modelnew_server.py command), its resource limits, the backend, the tolerance, the trial counts and the run's
seed. It writes one judged record (JSON on stdout) that ca-reward and ca-eval read like ca-profile's output:
verify, profile, and a `kernelbench` verdict in the manner of KernelBench's own eval, so that a report shows
where the two disagree.

The solution runs in its own sandboxed process and never sees a seed: every call's inputs are drawn here, with
the problem's get_inputs under a seed that mixes the run's seed with a salt from os.urandom, and sent as bytes.
Each call's output is fetched and compared here with the project's rules (torch/compare.h). The eager and
torch.compile baselines run the reference Model in the same server, in the same sandbox, on the same inputs,
timed by the same clock: this process's monotonic clock from the request that starts the call to the reply
after the device synchronised, less the round trip of an empty request (the ping floor), with the cache
flushed before every call. Exit status 0 with a record; 65 for a bad request; 74 when the sandbox or the
reference itself cannot run (the harness's failure, not the solution's).
"""
import hashlib
import json
import os
import resource
import select
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from modelnew_server import DTYPES, NAMES, last_level_cache_bytes, tensor_bytes  # noqa: E402 (the server's own codecs)

KERNELBENCH_TRIALS = 5  # KernelBench's num_correct_trials, seed_num and tolerance
KERNELBENCH_SEED = 42
KERNELBENCH_TOLERANCE = 1e-2
HEADER_LIMIT = 1 << 20


class Infrastructure(Exception):
    """The harness could not judge: the sandbox or the reference failed."""


class SolutionFailed(Exception):
    def __init__(self, stage, message):
        super().__init__(message)
        self.stage = stage


class Sandboxed:
    """One server process in the sandbox, and the requests to it."""

    def __init__(self, argv, limits, timeout_s):
        self.timeout_s = timeout_s
        self.err = tempfile.TemporaryFile()
        gpu = limits.get("gpu", False)

        def apply_limits():  # common/sandbox's rlimits: per process, memory as data with a GPU
            cpu = max(1, int(limits["cpu_s"]))
            resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
            memory = resource.RLIMIT_DATA if gpu else resource.RLIMIT_AS
            resource.setrlimit(memory, (limits["memory_bytes"], limits["memory_bytes"]))
            resource.setrlimit(resource.RLIMIT_NPROC, (limits["processes"], limits["processes"]))
            resource.setrlimit(resource.RLIMIT_FSIZE, (limits["file_bytes"], limits["file_bytes"]))
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.err,
                                     preexec_fn=apply_limits, start_new_session=True)
        self.buffer = bytearray()

    def stderr_tail(self):
        self.err.seek(0, os.SEEK_END)
        size = self.err.tell()
        self.err.seek(max(0, size - 1500))
        return self.err.read().decode(errors="replace").strip()

    def fail(self, stage, what):
        self.close()
        tail = self.stderr_tail()
        raise SolutionFailed(stage, what + (": " + tail[-1500:] if tail else ""))

    def send(self, header, tensors=()):
        header = dict(header, tensors=[{"dtype": NAMES[t.dtype], "shape": list(t.shape),
                                        "nbytes": t.numel() * t.element_size()} for t in tensors])
        try:
            self.proc.stdin.write(json.dumps(header).encode() + b"\n")
            for tensor in tensors:
                self.proc.stdin.write(tensor_bytes(tensor))
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            self.fail("run", "the process ended")

    def fill(self, deadline, stage, want):
        """Reads what the server wrote next (at most `want` bytes) into the buffer, or fails the stage."""
        fd = self.proc.stdout.fileno()
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self.fail(stage, f"no reply within {self.timeout_s:g} s")
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                break
        chunk = os.read(fd, max(1 << 16, min(want, 1 << 24)))
        if not chunk:
            self.proc.wait()
            self.fail(stage, f"the process ended ({describe_status(self.proc.returncode)})")
        self.buffer += chunk

    def read_exact(self, n, deadline, stage):
        while len(self.buffer) < n:
            self.fill(deadline, stage, n - len(self.buffer))
        data = self.buffer[:n]
        del self.buffer[:n]
        return data

    def read_line(self, deadline, stage):
        while b"\n" not in self.buffer:
            if len(self.buffer) > HEADER_LIMIT:
                self.fail(stage, "a reply header over 1 MiB")
            self.fill(deadline, stage, 1 << 16)
        end = self.buffer.index(b"\n")
        line = bytes(self.buffer[:end])
        del self.buffer[:end + 1]
        return line

    def request(self, header, tensors=(), stage="run", max_bytes=0):
        """Sends a request and returns (reply header, tensors); a failed reply raises SolutionFailed(stage)."""
        self.send(header, tensors)
        deadline = time.monotonic() + self.timeout_s
        try:
            reply = json.loads(self.read_line(deadline, stage))
            if not isinstance(reply, dict):
                raise ValueError("not an object")
        except ValueError as error:
            self.fail(stage, f"a reply that is not the protocol's ({error})")
        if not reply.get("ok"):
            raise SolutionFailed(stage, str(reply.get("error", "failed"))[:2000])
        received = []
        total = 0
        for spec in reply.get("tensors", []):
            try:
                dtype = DTYPES[spec["dtype"]]
                shape = [int(d) for d in spec["shape"]]
                count = 1
                for d in shape:
                    if d < 0:
                        raise ValueError("negative size")
                    count *= d
                nbytes = int(spec["nbytes"])
                if nbytes != count * torch.empty(0, dtype=dtype).element_size():
                    raise ValueError("nbytes does not match the shape")
            except (KeyError, TypeError, ValueError) as error:
                self.fail(stage, f"a malformed tensor in the reply ({error})")
            total += nbytes
            if total > max_bytes:
                self.fail(stage, f"outputs of {total} bytes where at most {max_bytes} were expected")
            data = self.read_exact(nbytes, deadline, stage)
            flat = torch.frombuffer(data, dtype=torch.uint8) if data else torch.empty(0, dtype=torch.uint8)
            received.append(flat.view(dtype).reshape(shape))
        return reply, received

    def timed_run(self):
        """The wall time of one call, seen from here, in microseconds."""
        start = time.perf_counter_ns()
        self.request({"op": "run"})
        return (time.perf_counter_ns() - start) / 1e3

    def ping_floor(self, count=7):
        samples = []
        for _ in range(count):
            start = time.perf_counter_ns()
            self.request({"op": "ping"})
            samples.append((time.perf_counter_ns() - start) / 1e3)
        return statistics.median(samples)

    def close(self):
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait()


def describe_status(code):
    if code is None:
        return "running"
    if code < 0:
        return f"killed by signal {-code} ({signal.Signals(-code).name})"
    if code > 128:
        return f"exit status {code} (signal {code - 128}: {signal.Signals(code - 128).name})"
    return f"exit status {code}"


def compare(out, ref, atol, rtol):
    """torch/compare.h's rules: equal shape and dtype; no NaN/Inf where the reference is finite; allclose
    elementwise; and ||out - ref|| / ||ref|| within rtol, which catches outputs too small for atol to judge.
    Returns "" or why the output is wrong."""
    if tuple(out.shape) != tuple(ref.shape) or out.dtype != ref.dtype:
        return f"shape or dtype mismatch: got {list(out.shape)} {out.dtype}, expected {list(ref.shape)} {ref.dtype}"
    o = out.to(ref.device).double().flatten()
    r = ref.double().flatten()
    if o.numel() == 0:
        return ""
    finite = torch.isfinite(r)
    bad = finite & ~torch.isfinite(o)
    if bool(bad.any()):
        index = int(bad.nonzero()[0][0])
        return f"{'NaN' if torch.isnan(o[index]) else 'Inf'} at flat index {index} where the reference is {float(r[index]):.6g}"
    same = (torch.isnan(o) & torch.isnan(r)) | (o == r)
    diff = torch.where(same, torch.zeros_like(o), (o - r).abs())
    over = (diff > atol + rtol * r.abs()) | (~finite & (diff != 0))
    if bool(over.any()):
        index = int(over.nonzero()[0][0])
        return (f"mismatch at flat index {index}: got {float(o[index]):.6g}, expected {float(r[index]):.6g} "
                f"({int(over.sum())} of {o.numel()} elements off; atol {atol:g}, rtol {rtol:g})")
    ref_norm = float(torch.where(finite, r, torch.zeros_like(r)).norm())
    diff_norm = float(torch.where(finite, diff, torch.zeros_like(diff)).norm())
    if ref_norm > 0 and diff_norm / ref_norm > rtol:
        return (f"normalized error ||out - ref|| / ||ref|| = {diff_norm / ref_norm:.6g} exceeds rtol {rtol:g} "
                "(the reference is small against atol, so allclose alone would pass)")
    return ""


def as_list(outputs):
    return list(outputs) if isinstance(outputs, (tuple, list)) else [outputs]


def input_message(inputs):
    """The inputs request: tensors as bytes, other arguments as JSON values."""
    args, tensors = [], []
    for value in inputs:
        if isinstance(value, torch.Tensor):
            args.append({"tensor": len(tensors)})
            tensors.append(value.detach().cpu())
        else:
            args.append({"value": value})
    return {"op": "inputs", "args": args}, tensors


class Judge:
    def __init__(self, request):
        self.request = request
        self.task = request["task"]
        self.device = "cuda" if request["backend"] == "cuda" else "cpu"
        self.atol = request["tolerance"]["atol"]
        self.rtol = request["tolerance"]["rtol"]
        sys.path.insert(0, request["bridge"])
        from import_kernelbench import load_problem
        self.problem = load_problem(self.task["file"], self.task.get("scale", 1))
        self.init = list(self.problem.get_init_inputs())
        try:
            json.dumps(self.init)
        except TypeError as error:
            raise Infrastructure(f"get_init_inputs returns values that cannot be sent ({error})")
        salt = int.from_bytes(os.urandom(8), "little")
        self.salt = salt
        self.input_seeds = []

    def seed(self, what):
        """A seed the sandboxed process never sees: the run's seed, the task and a fresh salt, hashed."""
        text = f"{self.request['seed']}/{self.salt}/{self.task['id']}/{what}"
        return int.from_bytes(hashlib.sha256(text.encode()).digest()[:7], "little")

    def reference_model(self, seed):
        torch.manual_seed(seed)
        model = self.problem.Model(*self.init)
        return model.to(self.device).eval() if isinstance(model, torch.nn.Module) else model

    def inputs(self, seed):
        torch.manual_seed(seed)
        return list(self.problem.get_inputs())

    def expected(self, model, inputs):
        with torch.no_grad():
            moved = [x.to(self.device) if isinstance(x, torch.Tensor) else x for x in inputs]
            return [t.detach() for t in as_list(model(*moved))]

    def server(self, kind, compile_model=False, stage="load"):
        server = Sandboxed(self.request["sandbox"], self.request["limits"], self.request["load_timeout_s"])
        path = self.request["solution"] if kind == "solution" else self.task["file"]
        server.request({"op": "load", "kind": kind, "path": path, "bridge": self.request["bridge"],
                        "scale": self.task.get("scale", 1), "device": self.device, "compile": compile_model,
                        "tf32": self.request.get("tf32", "pytorch"), "flush_bytes": 2 * last_level_cache_bytes()},
                       stage=stage)
        server.timeout_s = self.request["call_timeout_s"]
        return server

    def call(self, server, inputs, expected, stage):
        """One checked call: inputs, the timed run, the outputs fetched and compared. Returns the time."""
        header, tensors = input_message(inputs)
        server.request(header, tensors, stage=stage)
        elapsed = server.timed_run()
        limit = sum(t.numel() * t.element_size() for t in expected) + 1024
        reply, outputs = server.request({"op": "fetch"}, stage=stage, max_bytes=limit)
        if len(outputs) != len(expected):
            raise SolutionFailed(stage, f"{len(outputs)} outputs, expected {len(expected)}")
        for i, (out, ref) in enumerate(zip(outputs, expected)):
            why = compare(out, ref.cpu() if self.device == "cpu" else ref, self.atol, self.rtol)
            if why:
                raise SolutionFailed(stage, f"output {i}: {why}")
        return elapsed

    def kernelbench_verdict(self, server):
        """KernelBench's check: both models built after seeding 42, five trials whose inputs get_inputs makes
        after seeding each trial's seed (drawn from seed 42), outputs compared by shape and then
        torch.allclose(atol=rtol=1e-2)."""
        try:
            server.request({"op": "construct", "seed": KERNELBENCH_SEED, "init": self.init}, stage="construct")
            model = self.reference_model(KERNELBENCH_SEED)
            torch.manual_seed(KERNELBENCH_SEED)
            seeds = [int(torch.randint(0, 2**32 - 1, (1,)).item()) for _ in range(KERNELBENCH_TRIALS)]
            for trial, seed in enumerate(seeds):
                inputs = self.inputs(seed)
                expected = self.expected(model, inputs)
                header, tensors = input_message(inputs)
                server.request(header, tensors)
                server.request({"op": "run"})
                limit = 4 * sum(t.numel() * t.element_size() for t in expected) + 1024
                _, outputs = server.request({"op": "fetch"}, max_bytes=limit)
                for out, ref in zip(outputs, expected):
                    ref = ref.cpu()
                    if out.shape != ref.shape:
                        return {"verdict": "FAIL", "message": f"trial {trial}: output shape {list(out.shape)}, "
                                f"expected {list(ref.shape)}"}
                    if not torch.allclose(out.to(ref.dtype) if out.dtype != ref.dtype else out, ref,
                                          atol=KERNELBENCH_TOLERANCE, rtol=KERNELBENCH_TOLERANCE):
                        return {"verdict": "FAIL", "message": f"trial {trial}: outputs not allclose"}
                if len(outputs) != len(expected):
                    return {"verdict": "FAIL", "message": f"trial {trial}: {len(outputs)} outputs"}
        except SolutionFailed as error:
            return {"verdict": "FAIL", "message": f"{error.stage}: {error}"[:500]}
        return {"verdict": "PASS", "message": ""}

    def run(self):
        record = {"kind": "candidate", "id": self.task["id"] + "/modelnew", "task_id": self.task["id"],
                  "format": "modelnew", "solution": self.request["solution"], "backend": self.request["backend"]}
        trials, timed, warmup = self.request["trials"], self.request["timed"], self.request["warmup"]
        tolerance = {"atol": self.atol, "rtol": self.rtol}
        try:
            eager = self.server("reference")
            eager.request({"op": "construct", "seed": 0, "init": self.init}, stage="load")
        except SolutionFailed as error:
            raise Infrastructure(f"the reference Model does not run in the sandbox: {error.stage}: {error}")
        compiled, compile_error = None, ""
        if self.request.get("compile"):
            try:
                compiled = self.server("reference", compile_model=True)
                compiled.request({"op": "construct", "seed": 0, "init": self.init}, stage="load")
            except SolutionFailed as error:
                compiled, compile_error = None, str(error)[:500]
        candidate = None
        try:
            candidate = self.server("solution")
            record["kernelbench"] = self.kernelbench_verdict(candidate)
        except SolutionFailed as error:
            record["kernelbench"] = {"verdict": "FAIL", "message": f"{error.stage}: {error}"[:500]}
        record["verify"] = {"ok": False, "stage": "", "tolerance": tolerance, "trials": trials,
                            "message": ""}
        profile = None
        try:
            if candidate is None or candidate.proc.poll() is not None:
                candidate = self.server("solution")
            weights = self.seed("weights")
            candidate.request({"op": "construct", "seed": weights, "init": self.init}, stage="construct")
            model = self.reference_model(weights)
            for i in range(trials):
                inputs = self.inputs(self.seed(f"verify/{i}"))
                self.call(candidate, inputs, self.expected(model, inputs), "correctness")
            record["verify"]["ok"] = True
            profile = self.profile(candidate, model, eager, compiled, compile_error, timed, warmup)
        except SolutionFailed as error:
            stage = "correctness" if error.stage == "correctness" else error.stage
            target = record["verify"] if not record["verify"]["ok"] else None
            if target is not None:
                target.update(stage=stage, message=str(error)[:2000])
            else:
                profile = {"ok": False, "stage": "profile", "message": "a timed call " + str(error)[:2000]}
        for server in (candidate, eager, compiled):
            if server is not None:
                server.close()
        if profile is None:
            profile = {"ok": False, "skipped": "verification failed"}
        profile.update(device=device_name(self.device), backend=self.request["backend"],
                       precision=self.request.get("tf32", "pytorch"),
                       method="modelnew: the judge's monotonic clock from the request that starts a call to the "
                              "reply after the device synchronised, less the median empty round trip; cache "
                              "flushed before each call; median of the timed calls")
        record["profile"] = profile
        record["seeds"] = {"salt": self.salt, "run": self.request["seed"]}
        return record

    def profile(self, candidate, model, eager, compiled, compile_error, timed, warmup):
        floors = {"candidate": candidate.ping_floor(), "eager": eager.ping_floor()}
        if compiled is not None:
            floors["compile"] = compiled.ping_floor()
        samples = {name: [] for name in floors}
        servers = {"candidate": candidate, "eager": eager, "compile": compiled}
        for i in range(warmup + timed):
            inputs = self.inputs(self.seed(f"profile/{i}"))
            expected = self.expected(model, inputs)
            for name in list(samples):
                if name == "candidate":
                    elapsed = self.call(candidate, inputs, expected, "profile")
                else:
                    try:
                        header, tensors = input_message(inputs)
                        servers[name].request(header, tensors)
                        elapsed = servers[name].timed_run()
                    except SolutionFailed as error:
                        if name == "eager":
                            raise Infrastructure(f"the reference failed a timed call: {error}")
                        compile_error = str(error)[:500]
                        del samples[name]
                        continue
                if i >= warmup:
                    samples[name].append(max(elapsed - floors[name], 0.0))
        times = {name: None for name in ("candidate", "eager", "compile")}
        for name, values in samples.items():
            times[name] = statistics.median(values)
        speedup = {"vs_eager": None, "vs_compile": None}
        if times["candidate"]:
            speedup["vs_eager"] = times["eager"] / times["candidate"]
            if times["compile"] is not None:
                speedup["vs_compile"] = times["compile"] / times["candidate"]
        profile = {"ok": True, "times_us": times, "speedup": speedup, "calls": timed, "warmup": warmup,
                   "ping_floor_us": floors}
        if compile_error:
            profile["compile_error"] = compile_error
        return profile


def device_name(device):
    if device == "cuda":
        return "cuda:0 " + torch.cuda.get_device_name(0)
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return "cpu " + line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "cpu"


def main():
    try:
        request = json.loads(Path(sys.argv[1]).read_text())
    except (IndexError, OSError, ValueError) as error:
        print(f"modelnew_judge: error: the request: {error}", file=sys.stderr)
        return 65
    try:
        record = Judge(request).run()
    except Infrastructure as error:
        print(f"modelnew_judge: error: {request['task'].get('id')}: {error}", file=sys.stderr)
        return 74
    print(json.dumps(record))
    return 0


if __name__ == "__main__":
    sys.exit(main())
