"""The child: one process per case, so each case gets a fresh CUDA context and its own sampler.

Run as ``python -m flametool.child MSG_FD SPEC_JSON``.  It reports to the parent as JSON lines on the
file descriptor MSG_FD (stdout and stderr belong to the user's code) and reads one command from stdin,
``stop``, which ends the sampled phase.

Phases: set-up, warm-up, timed loops (host clock + device events, the seed's method), then at the sample
shape: set-up/warm-up/timing again if it differs, the cProfile loop, and the loop that py-spy samples.
Every phase runs the same function, ``active_loop``: the sampler keeps only stacks inside it.
"""

from __future__ import annotations

import cProfile
import fcntl
import gc
import importlib
import importlib.util
import json
import math
import os
import select
import statistics
import sys
import time
import traceback
from dataclasses import dataclass
from typing import Any, Callable

from . import explain, procs
from .cases import Step, Sync, cuda_index

ACTIVE_LOOP = "active_loop"
# The GPU is "well above" the host when its time per call exceeds the host's by this factor; below it,
# the GPU waited on the CPU and launch cost sets the pace.
HOST_BOUND_FACTOR = 1.2
DEFAULT_SAMPLE_SHAPE = (1024, 1024, 1024)
# At a shape other than the requested one, each timed loop runs at least this long so that the figure
# the samples are scaled by is not a few-millisecond reading.
MIN_LOOP_SECONDS = 0.1
MAX_LOOP_CALLS = 100_000
CPROFILE_SECONDS = 0.5


def active_loop(step: Step, n: int) -> None:
    # The sampler filters stacks on this frame's name: keep it a plain loop with nothing else inside.
    for _ in range(n):
        step()


@dataclass
class Events:
    """CUDA events from whichever library the case imported: both record on the current stream."""

    make: Callable[[], Any]
    elapsed_ms: Callable[[Any, Any], float]
    device_info: Callable[[], dict]

    def pair(self) -> tuple[Any, Any]:
        return self.make(), self.make()


def device_events(device: str) -> Events | None:
    index = cuda_index(device)
    if index is None:
        return None
    cupy = sys.modules.get("cupy")
    if cupy is not None:
        def cupy_info() -> dict:
            rt = cupy.cuda.runtime
            props = rt.getDeviceProperties(index)
            return {
                "device_name": props["name"].decode() if isinstance(props["name"], bytes) else props["name"],
                "device_index": index,
                "pci_bus_id": rt.deviceGetPCIBusId(index) if hasattr(rt, "deviceGetPCIBusId") else None,
                "cuda_runtime": _cuda_version(rt.runtimeGetVersion()),
                "cuda_driver_api": _cuda_version(rt.driverGetVersion()),
            }

        return Events(
            make=cupy.cuda.Event,
            elapsed_ms=lambda s, e: float(cupy.cuda.get_elapsed_time(s, e)),
            device_info=cupy_info,
        )
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        def torch_info() -> dict:
            return {
                "device_name": torch.cuda.get_device_name(index),
                "device_index": index,
                "pci_bus_id": _torch_pci(torch, index),
                "cuda_runtime": torch.version.cuda,
                "cuda_driver_api": None,
            }

        return Events(
            make=lambda: torch.cuda.Event(enable_timing=True),
            elapsed_ms=lambda s, e: float(s.elapsed_time(e)),
            device_info=torch_info,
        )
    return None


def _torch_pci(torch: Any, index: int) -> str | None:
    props = torch.cuda.get_device_properties(index)
    if not hasattr(props, "pci_bus_id"):
        return None
    return f"{getattr(props, 'pci_domain_id', 0):04x}:{props.pci_bus_id:02x}:{getattr(props, 'pci_device_id', 0):02x}.0"


def _cuda_version(v: int) -> str:
    return f"{v // 1000}.{(v % 1000) // 10}"


class Reporter:
    def __init__(self, fd: int) -> None:
        # Out of the case's way: moved to a high number, closed on exec (what the case starts does not get
        # it), and the number it came on points at /dev/null, so a case that writes there reaches no one.
        try:
            moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 512)
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, fd, inheritable=False)
            os.close(null)
            fd = moved
        except (OSError, AttributeError):  # no F_DUPFD_CLOEXEC, or a low limit on open files
            os.set_inheritable(fd, False)
        self.out = os.fdopen(fd, "w", buffering=1, encoding="utf-8")

    def send(self, event: str, **fields: Any) -> None:
        self.out.write(json.dumps({"event": event, **fields}) + "\n")
        self.out.flush()

    def phase(self, name: str, **fields: Any) -> None:
        self.send("phase", phase=name, **fields)


def load_factory(case: dict) -> Callable[..., tuple[Step, Sync]]:
    if case.get("module"):
        module = importlib.import_module(case["module"])
    else:
        spec = importlib.util.spec_from_file_location(f"flametool_case_{case['factory']}", case["file"])
        module = importlib.util.module_from_spec(spec)
        sys.path.insert(0, os.path.dirname(case["file"]))
        spec.loader.exec_module(module)
    factory = getattr(module, case["factory"], None)
    if not callable(factory):
        raise TypeError(f"{case['factory']} is not callable")
    return factory


class FactoryFailed(Exception):
    pass


class CaseUnavailable(Exception):
    """The machine cannot run this case (library missing or built for another CUDA, no device, out of
    memory at this shape): the message is the whole story, with what to do."""


def set_up(factory: Callable, shape: list[int], dtype: str, device: str) -> tuple[Step, Sync]:
    try:
        made = factory(*shape, dtype, device)
    except Exception as exc:
        known = explain.known_fault(exc, shape, dtype, device)
        if known:
            raise CaseUnavailable(known) from exc
        raise FactoryFailed(_describe(exc)) from exc
    if not (isinstance(made, tuple) and len(made) == 2 and all(callable(f) for f in made)):
        raise FactoryFailed(f"returned {type(made).__name__}, expected a (step, sync) pair of callables")
    return made


def _describe(exc: BaseException) -> str:
    # out of memory and faults of the installation are explained by explain.known_fault, before this
    first = next((l.strip() for l in str(exc).splitlines() if l.strip()), "")
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def warm_up(step: Step, sync: Sync, calls: int) -> float:
    """Returns host seconds per call including the final synchronisation (a rough rate estimate)."""
    sync()
    t0 = time.perf_counter()
    active_loop(step, calls)
    sync()
    return (time.perf_counter() - t0) / max(calls, 1)


def timed_loop(step: Step, sync: Sync, calls: int, events: Events | None) -> tuple[float, float | None]:
    """The seed's method: host clock around `calls` launches, device events around the same launches.
    Figures are per operation: a step that launches several (``step.ops``) is divided by that many."""
    sync()
    start = end = None
    if events is not None:
        start, end = events.pair()
        start.record()
    t0 = time.perf_counter()
    active_loop(step, calls)
    t1 = time.perf_counter()
    if events is not None:
        end.record()
    sync()
    ops = calls * ops_per_step(step)
    cpu_us = (t1 - t0) * 1e6 / ops
    gpu_us = events.elapsed_ms(start, end) * 1e3 / ops if events is not None else None
    return cpu_us, gpu_us


def ops_per_step(step: Step) -> int:
    return int(getattr(step, "ops", 1))


def timing(step: Step, sync: Sync, calls: int, repeats: int, events: Events | None, progress: Callable[[int], None]) -> dict:
    cpu: list[float] = []
    gpu: list[float] = []
    for r in range(repeats):
        progress(r)
        c, g = timed_loop(step, sync, calls, events)
        cpu.append(c)
        if g is not None:
            gpu.append(g)
    cpu_med = statistics.median(cpu)
    gpu_med = statistics.median(gpu) if gpu else None
    host_bound, note = classify(cpu_med, gpu_med)
    return {
        "iters": calls * ops_per_step(step),
        "cpu_us_per_call": cpu_med,
        "gpu_us_per_call": gpu_med,
        "cpu_us_per_call_repeats": cpu,
        "gpu_us_per_call_repeats": gpu,
        "host_bound": host_bound,
        "bound_note": note,
    }


def classify(cpu_us: float, gpu_us: float | None) -> tuple[bool, str]:
    if gpu_us is None:
        return True, "CPU device: all the work is on the host"
    if gpu_us > HOST_BOUND_FACTOR * cpu_us:
        return False, (
            f"not host-bound: the GPU takes {gpu_us / cpu_us:.1f}x the host time per call, so the launch queue "
            "hid the launches; CPU time is launch cost only and a sampler would see mostly waiting"
        )
    return True, (
        "host-bound: GPU time per call is close to CPU time per call, so the GPU waited on the CPU "
        "and launch cost sets the pace"
    )


def choose_sample_shape(requested: list[int] | None, shape: list[int], host_bound: bool) -> tuple[list[int], str]:
    if requested:
        return list(requested), "given with --sample-shape"
    if host_bound:
        return list(shape), "the requested shape is host-bound, so it is sampled as is"
    return list(DEFAULT_SAMPLE_SHAPE), (
        f"the requested shape {','.join(map(str, shape))} is not host-bound (the GPU hides launch cost), so "
        f"launches are sampled at the host-bound shape {','.join(map(str, DEFAULT_SAMPLE_SHAPE))}"
    )


def cprofile_phase(step: Step, sync: Sync, calls: int, path: str) -> dict:
    profiler = cProfile.Profile()
    total_calls = 0
    host = 0.0
    deadline = time.perf_counter() + CPROFILE_SECONDS
    while True:
        sync()
        t0 = time.perf_counter()
        profiler.enable()
        active_loop(step, calls)
        profiler.disable()
        host += time.perf_counter() - t0
        sync()
        total_calls += calls
        if time.perf_counter() >= deadline:
            break
    try:
        profiler.dump_stats(path)
    except OSError as exc:  # a full disk: one line, and no half-written profile left
        try:
            os.unlink(path)
        except OSError:
            pass
        raise CaseUnavailable(f"{path}: cannot be written ({exc.strerror or exc})") from None
    return {"cprofile_us_per_call": host * 1e6 / (total_calls * ops_per_step(step)), "cprofile_calls": total_calls}


def _stop_requested() -> bool:
    ready, _, _ = select.select([0], [], [], 0)
    if not ready:
        return False
    data = os.read(0, 64)
    return data == b"" or b"stop" in data


def sampled_phase(step: Step, sync: Sync, calls: int, max_seconds: float) -> list[list[float]]:
    """Run the active loop in chunks until the parent says stop; timestamps are CLOCK_MONOTONIC
    (time.monotonic), which the parent reads too, so it can tell which chunks py-spy was attached for."""
    chunks: list[list[float]] = []
    deadline = time.monotonic() + max_seconds
    while True:
        t0 = time.monotonic()
        active_loop(step, calls)
        t1 = time.monotonic()
        sync()
        chunks.append([t0, t1])
        if _stop_requested() or t1 > deadline:
            return chunks


def calls_for(seconds_per_call: float, at_least: int) -> int:
    return int(min(MAX_LOOP_CALLS, max(at_least, MIN_LOOP_SECONDS / max(seconds_per_call, 1e-9))))


def run(spec: dict, report: Reporter) -> dict:
    case = spec["case"]
    shape, dtype, device = spec["shape"], spec["dtype"], spec["device"]
    iters, repeats = spec["iters"], spec["repeats"]

    report.phase("setup", shape=shape)
    factory = load_factory(case)
    step, sync = set_up(factory, shape, dtype, device)
    events = device_events(device)
    ops = ops_per_step(step)
    # --iters and --warmup count operations: a step of N operations runs 1/N as often
    steps, warm_steps = max(1, math.ceil(iters / ops)), math.ceil(spec["warmup"] / ops)
    report.phase("warmup", calls=warm_steps)
    warm_up(step, sync, warm_steps)

    result: dict[str, Any] = {"shape": shape, "dtype": dtype, "device": device, "warmup": spec["warmup"],
                              "ops_per_step": ops}
    main = timing(step, sync, steps, repeats, events, lambda r: report.phase("timed", repeat=r + 1, of=repeats))
    result.update(main)
    result.update(events.device_info() if events else {"device_name": None})

    sample_shape, reason = choose_sample_shape(spec.get("sample_shape"), shape, main["host_bound"])
    result["sample_shape"] = sample_shape
    result["sample_shape_reason"] = reason
    if sample_shape == shape:
        sample_steps = steps
        result["sample_timing"] = {k: main[k] for k in ("iters", "cpu_us_per_call", "gpu_us_per_call", "cpu_us_per_call_repeats", "gpu_us_per_call_repeats", "host_bound", "bound_note")}
    else:
        del step, sync
        gc.collect()
        report.phase("setup", shape=sample_shape)
        step, sync = set_up(factory, sample_shape, dtype, device)
        report.phase("warmup", calls=warm_steps)
        per_step = warm_up(step, sync, warm_steps)
        sample_steps = calls_for(per_step, steps)
        result["sample_timing"] = timing(
            step, sync, sample_steps, repeats, events, lambda r: report.phase("timed", repeat=r + 1, of=repeats, shape=sample_shape)
        )

    if not spec.get("profile", True):  # a process that only times (--processes): no cProfile, no py-spy
        return result
    report.phase("cprofile")
    result.update(cprofile_phase(step, sync, sample_steps, spec["prof_path"]))

    if spec.get("sample", True):
        report.send("sample_ready", pid=os.getpid())
        result["chunks"] = sampled_phase(step, sync, sample_steps, spec["max_sample_seconds"])
        result["calls_per_chunk"] = sample_steps * ops
    return result


def main(argv: list[str]) -> int:
    report = Reporter(int(argv[0]))
    spec = json.loads(argv[1])
    procs.tie_to_parent(spec.get("parent_pid"))
    try:
        result = run(spec, report)
    except CaseUnavailable as exc:
        report.send("error", message=str(exc))
        return 1
    except FactoryFailed as exc:
        report.send("error", message=f"factory {spec['case']['factory']} failed: {exc}")
        return 1
    except Exception as exc:  # noqa: BLE001 -- anything a case does wrong becomes one line for the parent
        try:
            traceback.print_exc()
        except OSError:  # the log cannot be written (a full disk): the one line below still goes
            pass
        known = explain.known_fault(exc, spec["shape"], spec["dtype"], spec["device"])
        report.send("error", message=known or _describe(exc))
        return 1
    report.send("result", result=result)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
