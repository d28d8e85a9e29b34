"""The child: a fresh process that runs one job for the parent, then exits.

Run by ``childproc.child_command`` (``main(MSG_FD, JOB_JSON)``, the parent's flametool first on sys.path).  It
reports to the parent in protocol.py's messages, JSON lines on the file descriptor MSG_FD (stdout and stderr
belong to the user's code), and reads one command from stdin, ``stop``, which ends the sampled phase. Started
ahead of its job, with ``MSG_FD --spare PARENT_PID MODULES`` (a spare), it imports MODULES (comma-separated)
and then reads JOB_JSON as the first line on stdin.

Three jobs (``JOBS``, protocol.TimeJob, SweepJob and ProfileJob):
- ``time``: every case of a group built side by side in this one process, and their timed loops
  interleaved (host clock + device events around ``--iters`` calls, the seed's method), at the requested
  shape and at the sample shape. A process's own speed then multiplies every case in it alike.
- ``sweep``: the same, at each size of a sweep in turn (timings only).
- ``profile``: one case alone at the sample shape: its own unsampled loops, the cProfile loop, and the
  loop that py-spy samples (py-spy stops the whole process, so a sampled process holds one case).
Every loop runs the same function, ``active_loop``: the sampler keeps only stacks inside it.
"""

from __future__ import annotations

import cProfile
import fcntl
import gc
import importlib
import importlib.util
import math
import operator
import os
import select
import statistics
import sys
import threading
import time
import traceback
from dataclasses import dataclass
from typing import Any, Callable, cast

from ..workload import builtins, cases, inputs, ops
from .. import procs
from . import counting, explain
from ..run.counts import Counts
from ..workload.cases import CaseSpec, FactoryMisfit, Step, Sync, call_factory, cuda_index
from .protocol import (CaseProfiled, CaseTimed, Done, Failed, Job, JobCase, Message, Phase, PlanItem, Point, PointCase,
    ProfileJob, SampleReady, SweepJob, Swept, Timed, TimedLoops, TimeJob, decode_job, encode)
from ..run.record import DeviceInfo, Loops, Operands, boundedness

ACTIVE_LOOP = "active_loop"
# Host-bound loops are cheap: rounds continue past --repeats until each case has been timed for the job's
# timed_seconds (config.Defaults: per device). On the H200, three 4 ms loops per case and process gave
# cupy/torch ratios from 0.56 to 0.69 across processes.
MAX_ROUNDS = 400
# At a shape other than the requested one (the host-bound shape a GPU-bound run is sampled at) a loop runs
# --iters operations, and at least long enough that MAX_ROUNDS rounds fill timed_seconds: many short rounds
# pair the cases' loops closely in time. Loops of 0.1 s gave about ten rounds a second: in
# samples/h200-seed-fp16 (93 ms loops) each process's torch/cupy ratio kept a standard error of 2.35% from its
# rounds, as large as the spread between processes (2.73%), against 0.42% beside 1.94% in
# samples/h200-hostbound-1024 (4.4 ms loops, 400 rounds): benchmarks/noise.py.
# With --repeats (rounds exactly as given, none added) each loop at such a shape runs at least this long, so
# that the figure the samples are scaled by is not a few-millisecond reading.
MIN_LOOP_SECONDS = 0.1
MAX_LOOP_CALLS = 100_000
CPROFILE_SECONDS = 0.5
# A round of GPU-bound loops that hold the GPU for seconds each (the seed's shape: 250 products of 57 ms, 14 s
# a loop) costs much and says little: the launch cost there is read off the queue, and the comparison that
# pairs is made at the host-bound sample shape. Without --repeats such loops get LONG_ROUNDS rounds (AB BA:
# each case first once), not `repeats`.
LONG_LOOP_SECONDS = 2.0
LONG_ROUNDS = 2


def active_loop(step: Step, n: int) -> None:
    # The sampler filters stacks on this frame's name: keep it a plain loop with nothing else inside.
    for _ in range(n):
        step()


@dataclass
class Events:
    """CUDA events from whichever library the case imported: both record on the current stream."""

    make: Callable[[], Any]
    elapsed_ms: Callable[[Any, Any], float]
    device_info: Callable[[], DeviceInfo]

    def pair(self) -> tuple[Any, Any]:
        return self.make(), self.make()


def device_events(device: str) -> Events | None:
    index = cuda_index(device)
    if index is None:
        return None
    cupy = sys.modules.get("cupy")
    if cupy is not None:
        def cupy_info() -> DeviceInfo:
            rt = cupy.cuda.runtime
            props = rt.getDeviceProperties(index)
            return DeviceInfo(
                device_name=props["name"].decode() if isinstance(props["name"], bytes) else props["name"],
                device_index=index,
                pci_bus_id=rt.deviceGetPCIBusId(index) if hasattr(rt, "deviceGetPCIBusId") else None,
                cuda_runtime=_cuda_version(rt.runtimeGetVersion()),
                cuda_driver_api=_cuda_version(rt.driverGetVersion()),
            )

        return Events(
            make=cupy.cuda.Event,
            elapsed_ms=lambda s, e: float(cupy.cuda.get_elapsed_time(s, e)),
            device_info=cupy_info,
        )
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        def torch_info() -> DeviceInfo:
            return DeviceInfo(device_name=torch.cuda.get_device_name(index), device_index=index,
                              pci_bus_id=_torch_pci(torch, index), cuda_runtime=torch.version.cuda)

        return Events(
            make=lambda: torch.cuda.Event(enable_timing=True),
            elapsed_ms=lambda s, e: float(s.elapsed_time(e)),
            device_info=torch_info,
        )
    return None


def device_info(device: str, events: Events | None) -> DeviceInfo:
    """The device a process's cases ran on, named by the CUDA library it loaded: cupy's or torch's (their
    events), else jax's (a process of jax cases alone)."""
    if events is not None:
        return events.device_info()
    jax, index = sys.modules.get("jax"), cuda_index(device)
    if jax is not None and index is not None:
        try:
            gpus = [d for d in jax.devices() if d.platform in ("gpu", "cuda")]
            return DeviceInfo(device_name=gpus[index].device_kind, device_index=index)
        except Exception:  # noqa: BLE001 -- a name is all this is for
            pass
    return DeviceInfo()


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

    def send(self, message: Message) -> None:
        self.out.write(encode(message))
        self.out.flush()

    def phase(self, name: str, **fields: Any) -> None:
        self.send(Phase(name, **fields))


def load_factory(case: CaseSpec) -> Callable[..., tuple[Step, Sync]]:
    if case.module:
        module = importlib.import_module(case.module)
    else:
        spec = importlib.util.spec_from_file_location(f"flametool_case_{case.factory}", case.file)
        # a case without a module has a .py file (cases.parse_case), which a source loader loads
        assert spec is not None and spec.loader is not None and case.file is not None
        module = importlib.util.module_from_spec(spec)
        sys.path.insert(0, os.path.dirname(case.file))
        spec.loader.exec_module(module)
    factory = getattr(module, case.factory, None)
    if not callable(factory):
        raise TypeError(f"{case.factory} is not callable")
    return factory


class FactoryFailed(Exception):
    pass


class CaseUnavailable(Exception):
    """The machine cannot run this case (library missing or built for another CUDA, no device, out of
    memory at this shape), or its loop failed and the message was already made (interleaved): the message
    is the whole story."""


def set_up(factory: Callable, shape: list[int], dtype: str, device: str) -> tuple[Step, Sync]:
    try:
        made = call_factory(factory, shape, dtype, device)
    except FactoryMisfit as exc:
        raise FactoryFailed(str(exc)) from exc
    except Exception as exc:
        known = explain.known_fault(exc, shape, dtype, device)
        if known:
            raise CaseUnavailable(known) from exc
        raise FactoryFailed(_describe(exc)) from exc
    if not (isinstance(made, tuple) and len(made) == 2 and all(callable(f) for f in made)):
        raise FactoryFailed(f"returned {type(made).__name__}, expected a (step, sync) pair of callables")
    check_ops(made[0])
    return made


# step.ops at most this: a step of a million operations already reads its time per operation in picoseconds
MAX_OPS_PER_STEP = 1_000_000


def check_ops(step: Step) -> None:
    """step.ops, when the factory set it, is a whole number of operations from 1 to MAX_OPS_PER_STEP: every
    figure is divided by it, and a negative, zero, fractional or absurd count makes every figure wrong."""
    ops = getattr(step, "ops", 1)
    try:
        whole = None if isinstance(ops, bool) else operator.index(ops)  # an int, or numpy's
    except TypeError:
        whole = None
    if whole is None or not 1 <= whole <= MAX_OPS_PER_STEP:
        shown = repr(ops) if len(repr(ops)) <= 40 else repr(ops)[:37] + "..."
        raise FactoryFailed(f"step.ops is {shown}: it must be a positive integer (the operations one call of "
                            f"step launches), at most {MAX_OPS_PER_STEP:,}")


# An operand fingerprint hashes at most this many elements of each array (every s-th one beyond), so that the
# seed's 1.6-billion-element a costs a copy of megabytes, not gigabytes, off the device.
FINGERPRINT_ELEMENTS = 1 << 22


def host_sample(array: Any) -> tuple[str, list[int], bytes, int]:
    """(dtype, shape, bytes of every s-th element, s) of a numpy, CuPy or PyTorch array: its raw bytes, read
    back from the device; torch's bfloat16, which numpy has no type for, as its 16-bit patterns."""
    shape = [int(d) for d in array.shape]
    size = math.prod(shape)
    stride = max(1, math.ceil(size / FINGERPRINT_ELEMENTS))
    if type(array).__module__.startswith("torch"):
        import torch

        flat = array.detach().reshape(-1)[::stride]
        dtype = str(array.dtype).removeprefix("torch.")
        if array.dtype == torch.bfloat16:
            flat = flat.view(torch.int16)
        host = flat.cpu().contiguous().numpy()
    else:
        flat = array.reshape(-1)[::stride]
        dtype = str(array.dtype)
        host = flat.get() if hasattr(flat, "get") else flat
    import numpy as np

    return dtype, shape, np.ascontiguousarray(host).tobytes(), stride


def fingerprint(step: Step, product: list[int] | None = None) -> Operands | None:
    """The step's operands (``step.operands``, the arrays it reads) as a short hash of their dtypes, shapes and
    bytes, with how they were made (``step.operands_made``) and how much was hashed, for the product of shape
    `product`; None without operands."""
    arrays = getattr(step, "operands", None)
    if not isinstance(arrays, (tuple, list)) or not arrays:
        return None
    import hashlib

    h = hashlib.blake2b(digest_size=6)
    strides = []
    for array in arrays:
        dtype, shape, data, stride = host_sample(array)
        h.update(f"{dtype}{shape}{stride};".encode())
        h.update(data)
        strides.append(stride)
    hashed = ("every byte" if all(s == 1 for s in strides)
              else "of each, one element in " + ", ".join(f"{s:,}" for s in strides))
    made = getattr(step, "operands_made", None)
    return Operands(shape=list(product or []), fingerprint=h.hexdigest(),
                    made=made if isinstance(made, str) else "step.operands of the case",
                    hashed=f"blake2b of {len(arrays)} operands, {hashed}")


def _describe(exc: BaseException) -> str:
    # out of memory and faults of the installation are explained by explain.known_fault, before this
    first = next((l.strip() for l in str(exc).splitlines() if l.strip()), "")
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def warm_up(step: Step, sync: Sync, calls: int) -> float:
    """Returns host seconds per call including the final synchronisation (a rough rate estimate), read off
    the second half of the calls: the first calls of a shape pay for its set-up (on the H200, 50 cupy calls
    at 1024^3 read 73 us a call against 17 us after, so its loops were chosen 4x too short, and the rounds
    that run until each case has had its second of loops gave torch 4 s a process)."""
    first = calls // 2
    sync()
    active_loop(step, first)
    sync()
    t0 = time.perf_counter()
    active_loop(step, calls - first)
    sync()
    return (time.perf_counter() - t0) / max(calls - first, 1)


@dataclass
class LoopTime:
    """One timed loop, us per operation: the caller's host clock, the device's, the wall time to the sync after
    the loop, and the CPU time of every thread of the process during the loop (the caller's and any worker's:
    JAX hands each call to threads of its own)."""

    cpu: float
    gpu: float | None
    wall: float
    all_threads: float
    other_threads: float = 0.0  # the CPU time of the threads other than the caller (all threads' minus its own)


def timed_loop(step: Step, sync: Sync, calls: int, events: Events | None) -> LoopTime:
    """The seed's method: host clock around `calls` launches, device events around the same launches.
    Figures are per operation: a step that launches several (``step.ops``) is divided by that many.
    The wall time runs on to the synchronisation after the loop, the time per call a program that runs these
    calls back to back feels, whichever side of the launch queue sets the pace. A step whose work goes to
    streams the events do not see (``step.device_clock == "wall"``: jax) gets that wall time as its device
    time: the GPU's own where the GPU sets the pace, an upper bound of it where the host does."""
    if getattr(step, "device_clock", None) == "wall":
        events = None
        wall_clock = True
    else:
        wall_clock = events is not None
    sync()
    start: Any  # the case library's CUDA events (Events.pair)
    end: Any
    start = end = None
    if events is not None:
        start, end = events.pair()
        start.record()
    c0, o0 = time.process_time(), time.thread_time()
    t0 = time.perf_counter()
    active_loop(step, calls)
    t1 = time.perf_counter()
    c1, o1 = time.process_time(), time.thread_time()
    if events is not None:
        end.record()
    sync()
    t2 = time.perf_counter()
    ops = calls * ops_per_step(step)
    wall = (t2 - t0) * 1e6 / ops
    gpu_us = events.elapsed_ms(start, end) * 1e3 / ops if events is not None else (wall if wall_clock else None)
    return LoopTime((t1 - t0) * 1e6 / ops, gpu_us, wall, (c1 - c0) * 1e6 / ops,
                    max((c1 - c0) - (o1 - o0), 0.0) * 1e6 / ops)


def ops_per_step(step: Step) -> int:
    return int(getattr(step, "ops", 1))


def bound(loops: Loops) -> tuple[bool, str]:
    """record.boundedness() of the medians of one case's loops so far."""
    gpu = statistics.median(loops.gpu_us) if loops.gpu_us else None
    return boundedness(statistics.median(loops.cpu_us), gpu)


def choose_sample_shape(requested: list[int] | None, shape: list[int], host_bound: bool,
                        op: str = "matmul") -> tuple[list[int], str]:
    """One sample shape for every case of a process, so that the cases compared are sampled alike: the op's
    host-bound shape (ops.py) where the requested one is not host-bound."""
    if requested:
        return list(requested), "given with --sample-shape"
    if host_bound:
        return list(shape), "the requested shape is host-bound, so it is sampled as is"
    fallback = ops.host_bound_shape(op, "cuda")
    if list(fallback) == list(shape):  # already the host-bound size: sampled as is, whatever the case's GPU hides
        return list(shape), (f"the requested shape is the op's host-bound size {','.join(map(str, shape))}, where "
                             "launches are sampled; not every case is host-bound even there")
    return list(fallback), (
        f"the requested shape {','.join(map(str, shape))} is not host-bound (the GPU hides launch cost), so "
        f"launches are sampled at the host-bound shape {','.join(map(str, fallback))}"
    )


def cprofile_phase(step: Step, sync: Sync, calls: int, path: str) -> tuple[float, int, dict]:
    """(host us per call under cProfile, calls profiled, its function table), the profile written to `path`."""
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
    return host * 1e6 / (total_calls * ops_per_step(step)), total_calls, profiler.stats


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


def extend_seconds(job: Job) -> float:
    """How long each host-bound case is timed for, rounds added past --repeats until then; 0: --repeats
    was given, rounds exactly as many."""
    return job.timed_seconds if job.extend_rounds else 0.0


def calls_for(seconds_per_call: float, at_least: int, extend: float) -> int:
    """Calls per loop at a shape other than the requested one; `extend` (extend_seconds): rounds are added
    until each case had that long, so a loop is at least 1/MAX_ROUNDS of it."""
    least = extend / MAX_ROUNDS if extend else MIN_LOOP_SECONDS
    return int(min(MAX_LOOP_CALLS, max(at_least, least / max(seconds_per_call, 1e-9))))


def round_order(labels: list[str], r: int) -> list[str]:
    """The order of the cases in round r: rotated every other round and reversed on odd rounds, so that
    over the rounds each case goes first and last equally often (for two cases: AB BA BA AB, ...) and a
    drift within the process, or the cost of following another case, falls on every case alike."""
    if len(labels) < 2:
        return list(labels)
    k = (r // 2) % len(labels)
    order = labels[k:] + labels[:k]
    return order[::-1] if r % 2 else order


def build(todo: list[JobCase], shape: list[int], device: str, report: Reporter,
          errors: dict[str, str], operands: dict[str, Operands] | None = None) -> dict[str, tuple[Step, Sync]]:
    """Every case's (step, sync) at `shape`; a case that cannot be built is left out, its reason in `errors`.
    With `operands`, each built case's operand fingerprint (when its step has operands) goes there by label."""
    made: dict[str, tuple[Step, Sync]] = {}
    for c in todo:
        if c.label in errors:
            continue
        report.phase("setup", shape=shape, label=c.label)
        imported(builtins.builtin_libraries([c.case]))
        try:
            made[c.label] = set_up(load_factory(c.case), shape, c.dtype, device)
            if operands is not None:
                try:
                    found = fingerprint(made[c.label][0], shape)
                except Exception:  # noqa: BLE001 -- operands it cannot read leave the case unflagged, not failed
                    print(f"flametool: {c.label}: step.operands could not be hashed:", file=sys.stderr)
                    traceback.print_exc()
                    found = None
                if found:
                    operands[c.label] = found
        except CaseUnavailable as exc:
            errors[c.label] = str(exc)
        except FactoryFailed as exc:
            errors[c.label] = f"factory {c.case.factory} failed: {exc}"
        except Exception as exc:  # noqa: BLE001 -- a case's file that does not load is that case's failure
            traceback.print_exc()
            errors[c.label] = explain.known_fault(exc, shape, c.dtype, device) or _describe(exc)
    return made


def interleaved(made: dict[str, tuple[Step, Sync]], calls: dict[str, int], repeats: int, events: Events | None,
                report: Reporter, shape: list[int], errors: dict[str, str], extend: float) -> dict[str, Loops]:
    """Rounds of one timed loop of each case, in round_order; per case its loops. `repeats` rounds, and
    (with `extend` seconds, when --repeats was not given) more rounds of the host-bound cases (their loops
    take milliseconds) until each has been timed for `extend`: a handful of 4 ms loops is a noisy reading, a
    second's worth is not. A GPU-bound case (a graph floor) sits the extra rounds out: its loops are long
    and wait on the launch queue. Loops that are all GPU-bound and each take LONG_LOOP_SECONDS or more stop
    after LONG_ROUNDS rounds (with `extend`)."""
    loops = {label: Loops(cpu_us=[]) for label in made}
    spent = dict.fromkeys(made, 0.0)
    slot = r = 0
    while True:
        live = [l for l in made if l not in errors]
        if r >= repeats and not extend:
            break
        if extend and live and r >= LONG_ROUNDS and all(
                not bound(loops[l])[0] and spent[l] / len(loops[l].cpu_us) >= LONG_LOOP_SECONDS for l in live):
            break
        if live and r >= repeats:  # extra rounds: the host-bound cases, all of them, while one is short
            live = [l for l in live if bound(loops[l])[0]]
            if all(spent[l] >= extend for l in live):
                break
        if not live or r >= MAX_ROUNDS:
            break
        if r <= repeats:  # one line for the extra rounds, not one each
            report.phase("timed", repeat=r + 1, of=repeats, shape=shape, seconds=extend if r == repeats else None)
        for label in round_order(live, r):
            step, sync = made[label]
            t0 = time.perf_counter()
            try:
                t = timed_loop(step, sync, calls[label], events)
            except Exception as exc:  # noqa: BLE001 -- one case's fault ends that case, not the others
                traceback.print_exc()
                errors[label] = _describe(exc)
                continue
            spent[label] += time.perf_counter() - t0
            # 0.1 ns is finer than any loop's figure can be read to; more digits only fill run.json
            loops[label].cpu_us.append(round(t.cpu, 4))
            loops[label].wall_us.append(round(t.wall, 4))
            loops[label].all_threads_us.append(round(t.all_threads, 4))
            loops[label].other_threads_us.append(round(t.other_threads, 4))
            if t.gpu is not None:
                loops[label].gpu_us.append(round(t.gpu, 4))
            loops[label].slots.append(slot)
            slot += 1
        r += 1
    return loops


def time_cases(job: TimeJob, report: Reporter) -> Timed:
    """The timed phase of one process: every case of the group built side by side and their loops
    interleaved, at each shape of the plan. With ``decide``, the first process of a group times the
    requested shape, says which cases are host-bound, and picks the one shape all of them are sampled at."""
    out = Timed(cases={c.label: CaseTimed() for c in job.cases})
    errors = out.errors
    events: Events | None = None
    plan = list(job.plan)
    while plan:
        item = plan.pop(0)
        shape = item.shape
        operands: dict[str, Operands] = {}
        given = item.calls or {}
        # --iters counts operations at the requested shape; elsewhere a loop runs long enough to be read
        made, calls, ops = ready(job.cases, shape, job, report, errors, operands, lambda label, per_step, steps: (
            given.get(label) or (steps if item.key == "timing" else calls_for(per_step, steps, extend_seconds(job)))))
        if not made:
            break
        for label, found in operands.items():
            out.cases[label].operands.append(found)
        if events is None:  # every case built: every library imported
            events = device_events(job.device)
            info = device_info(job.device, events)
            for label in out.cases:
                out.cases[label].device_info = info
        for label in made:
            out.cases[label].ops_per_step = ops[label]
        loops = interleaved(made, calls, job.repeats, events, report, shape, errors, extend_seconds(job))
        for label in made:
            if label in errors:
                continue
            timing = TimedLoops(shape, calls[label] * ops[label], calls[label], loops[label])
            if loops[label].cpu_us:
                timing.host_bound, timing.bound_note = bound(loops[label])
            if item.key == "timing":
                out.cases[label].timing = timing
            else:
                out.cases[label].sample_timing = timing
        del made
        gc.collect()
        if item.decide:
            ok = [l for l in out.cases if l not in errors and out.cases[l].timing is not None]
            host_bound = all(cast(TimedLoops, out.cases[l].timing).host_bound for l in ok)  # ok: timed
            sample_shape, reason = choose_sample_shape(job.sample_shape, shape, host_bound, job.op)
            out.sample_shape, out.sample_shape_reason = sample_shape, reason
            if sample_shape != shape:
                plan.insert(0, PlanItem(sample_shape, None, "sample_timing"))
    return out


# A sweep point's loop runs --iters calls, fewer where that would take longer than SWEEP_LOOP_SECONDS or queue
# more than SWEEP_QUEUE_CALLS launches: at a GPU-bound size a loop longer than the launch queue (about 480
# GEMMs at 4096^3 on the H200) times the host waiting for room, not launching. Warm-up stops after
# SWEEP_WARM_SECONDS, so that the seed's size costs seconds, not 50 products of a minute each.
SWEEP_LOOP_SECONDS = 0.2
SWEEP_QUEUE_CALLS = 256
SWEEP_MIN_CALLS = 3
SWEEP_WARM_SECONDS = 0.5


def ready(cases: list[JobCase], shape: list[int], job: TimeJob | SweepJob, report: Reporter, errors: dict[str, str],
          operands: dict[str, Operands] | None, choose: Callable[[str, float, int], int],
          seconds: float | None = None) -> tuple[dict[str, tuple[Step, Sync]], dict[str, int], dict[str, int]]:
    """Each case built (build) and warmed up (warm_all) before the next is built, so that a library still
    importing behind (preload_behind) is waited for only by its own case. Returns (made, calls, ops)."""
    made: dict[str, tuple[Step, Sync]] = {}
    calls: dict[str, int] = {}
    ops: dict[str, int] = {}
    for c in cases:
        one = build([c], shape, job.device, report, errors, operands)
        got_calls, got_ops = warm_all(one, job, report, choose, seconds)
        made.update(one)
        calls.update(got_calls)
        ops.update(got_ops)
    return made, calls, ops


def warm_all(made: dict[str, tuple[Step, Sync]], job: TimeJob | SweepJob, report: Reporter,
             choose: Callable[[str, float, int], int], seconds: float | None = None) -> tuple[dict[str, int], dict[str, int]]:
    """Each case warmed up (--warmup operations; for at most `seconds` when given) and its calls per loop
    chosen: choose(label, seconds per step while warming up, steps that make --iters operations). Returns
    (calls per loop, operations per step), by label."""
    calls: dict[str, int] = {}
    ops: dict[str, int] = {}
    for label, (step, sync) in made.items():
        ops[label] = ops_per_step(step)
        warm = math.ceil(job.warmup / ops[label])
        report.phase("warmup", calls=warm, label=label)
        per_step = warm_up(step, sync, warm) if seconds is None else warm_up_within(step, sync, warm, seconds)
        calls[label] = choose(label, per_step, max(1, math.ceil(job.iters / ops[label])))
    return calls, ops


def warm_up_within(step: Step, sync: Sync, calls: int, seconds: float) -> float:
    """warm_up() in batches of 1, 2, 4, ... calls, stopping after `calls` or once `seconds` are spent; returns
    the last batch's seconds per call (the first call of a shape can take a thousand times the others)."""
    spent, done, batch, per = 0.0, 0, 1, 0.0
    while done < calls:
        n = min(batch, calls - done)
        per = warm_up(step, sync, n)
        spent, done, batch = spent + per * n, done + n, batch * 2
        if spent >= seconds:
            break
    return per


def sweep_calls(per_step: float, steps: int, on_device: bool) -> int:
    most = min(steps, int(SWEEP_LOOP_SECONDS / max(per_step, 1e-9)), SWEEP_QUEUE_CALLS if on_device else steps)
    return max(min(SWEEP_MIN_CALLS, steps), most)


def sweep_cases(job: SweepJob, report: Reporter) -> Swept:
    """One process of a sweep: at each point (a shape) in turn, every case built side by side, warmed up and
    its loops interleaved as in time_cases, then freed before the next point. A case that cannot be built or
    run at one point (out of memory at the largest) is reported for that point and still runs at the others.
    ``calls`` of a point, when given (processes after the first), are the calls per loop the first chose."""
    events: Events | None = None
    info = DeviceInfo()
    ops_by_case: dict[str, int] = {}
    for i, item in enumerate(job.points):
        shape, given = item.shape, item.calls
        todo = [c for c in job.cases if given is None or c.label in given]
        report.phase("point", index=i + 1, of=len(job.points), shape=shape)
        errors: dict[str, str] = {}
        operands: dict[str, Operands] = {}
        on_device = cuda_index(job.device) is not None
        made, calls, ops = ready(todo, shape, job, report, errors, operands if given is None else None,
                                 lambda label, per_step, steps: given[label] if given else
                                 sweep_calls(per_step, steps, on_device), SWEEP_WARM_SECONDS)
        if events is None and made:  # every case built: every library imported
            events = device_events(job.device)
            info = device_info(job.device, events)
        ops_by_case.update(ops)
        loops = interleaved(made, calls, job.repeats, events, report, shape, errors, extend_seconds(job))
        # each size as soon as it is measured: a run stopped at a later size keeps it
        report.send(Point(i, ops_by_case, info, {
            c.label: PointCase(error=errors[c.label]) if c.label in errors else
            PointCase(None, calls[c.label] * ops_by_case[c.label], calls[c.label], loops[c.label],
                      operands.get(c.label))
            for c in todo}))
        del made
        gc.collect()
    return Swept(len(job.points))


def profile_case(job: ProfileJob, report: Reporter) -> CaseProfiled:
    """The profiled process of one case, at the sample shape: its own unsampled loops (a check on the
    paired figure), the cProfile loop, then the loop py-spy samples until the parent says stop."""
    c, shape = job.case, job.shape
    assert c is not None  # a ProfileJob has its case (from_json; the field's None is the dataclass's order)
    report.phase("setup", shape=shape)
    step, sync = set_up(load_factory(c.case), shape, c.dtype, job.device)
    events = device_events(job.device)
    ops = ops_per_step(step)
    warm = math.ceil(job.warmup / ops)
    report.phase("warmup", calls=warm)
    per_step = warm_up(step, sync, warm)
    steps = job.steps or calls_for(per_step, max(1, math.ceil(job.iters / ops)), extend_seconds(job))
    errors: dict[str, str] = {}
    own = interleaved({c.label: (step, sync)}, {c.label: steps}, job.repeats, events, report, shape, errors,
                      extend_seconds(job))
    if errors:  # the loop raised; interleaved made its message
        raise CaseUnavailable(errors[c.label])
    report.phase("cprofile")
    us_per_call, profiled_calls, table = cprofile_phase(step, sync, steps, job.prof_path)
    result = CaseProfiled(own[c.label], steps * ops, us_per_call, profiled_calls)
    if job.sample:
        report.send(SampleReady(os.getpid()))
        result.chunks = sampled_phase(step, sync, steps, job.max_sample_seconds)
        result.calls_per_chunk = steps * ops
    if job.count:  # last: CUPTI's tracing is set up and torn down after every other loop of the process
        report.phase("count")
        result.counts = counted_loop(step, sync, steps, job.device, ops, table, profiled_calls)
    return result


def counted_loop(step: Step, sync: Sync, steps: int, device: str, ops: int, table: dict, profiled: int) -> Counts:
    """counting.count() of the case; a counted loop that fails is one line in its record, not a failed case."""
    try:
        return counting.count(step, sync, counting.count_steps(steps), device, ops, python=(table, profiled))
    except Exception as exc:  # noqa: BLE001 -- the other loops' figures stand without the counts
        return Counts(steps=0, python_steps=profiled, tallies=counting.python_tallies(table, profiled),
                      missing=[f"the counted loop failed: {_describe(exc)}"], ops_per_step=ops)


# each takes the job of its key
JOBS: dict[type, Callable[[Any, Reporter], Timed | Swept | CaseProfiled]] = {
    TimeJob: time_cases, SweepJob: sweep_cases, ProfileJob: profile_case}
SPARE = "--spare"


def preload(modules: list[str]) -> None:
    """A spare imports its cases' libraries while it waits (torch took 4-5 s a process on the H200 host).
    Best effort: a library that does not import is imported again by its factory, which says what is wrong."""
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001
            pass


_behind: tuple[threading.Thread, set[str]] | None = None  # preload_behind's thread and what it imports


def preload_behind(modules: list[str]) -> None:
    """preload() the first library now and the others in a thread, while the first case is built and warmed
    up (ready): at the seed's shape cupy's 50 warm-up products hold the GPU for 2.9 s, the thread waiting in
    cudaDeviceSynchronize without the GIL, and `import torch` took 6 s on the H200 host (benchmarks/startup.py)."""
    global _behind
    preload(modules[:1])
    if modules[1:]:
        thread = threading.Thread(target=preload, args=(modules[1:],), name="flametool-imports", daemon=True)
        _behind = (thread, set(modules[1:]))
        thread.start()


def imported(libraries: list[str]) -> None:
    """Before a case that imports `libraries` is built: preload_behind's import of them waited for, so that its
    factory finds them whole and never imports them beside that thread (two threads importing one package can
    meet in each other's import locks, and Python then fails one of the imports)."""
    if _behind is not None and _behind[1].intersection(libraries):
        _behind[0].join()


def start_operands(job: TimeJob | SweepJob | ProfileJob) -> list[str]:
    """Start making the built-in cases' operands for the job's first shape in the background, and return the
    libraries those cases import: at the seed's shape the values (1.9 billion) and `import torch` take seconds
    each, and the values' threads release the GIL, so a process does both at once."""
    todo = [cast(JobCase, job.case)] if isinstance(job, ProfileJob) else job.cases  # a ProfileJob has its case
    shape = (job.shape if isinstance(job, ProfileJob) else (job.plan[0].shape if job.plan else [])
             if isinstance(job, TimeJob) else job.points[0].shape if job.points else [])
    builtin = [c for c in todo if c.case.module == cases.MODULE and c.label in builtins.BUILTIN]
    if builtin and shape:
        inputs.prefetch_shape(shape, builtin[0].dtype)
    return builtins.builtin_libraries([c.case for c in builtin])


def read_job() -> TimeJob | SweepJob | ProfileJob | None:
    """A spare's job: the first line on stdin (None when the parent closed it: the spare was not needed)."""
    data = b""
    while not data.endswith(b"\n"):
        chunk = os.read(0, 1 << 16)
        if not chunk:
            return None
        data += chunk
    return decode_job(data)


def pin_cpus() -> None:
    """Run on the CPUs the parent chose (childproc.CPUS_ENV), before any library sizes its thread pools."""
    given = os.environ.get("FLAMETOOL_CPUS")
    if given:
        try:
            os.sched_setaffinity(0, {int(c) for c in given.split(",")})
        except (OSError, ValueError):  # not allowed here: the run goes on with every CPU, as without it
            pass


def main(argv: list[str]) -> int:
    pin_cpus()
    report = Reporter(int(argv[0]))
    if argv[1] == SPARE:
        procs.tie_to_parent(int(argv[2]))
        preload([m for m in argv[3].split(",") if m])
        job = read_job()
        if job is None:
            return 0
        start_operands(job)
    else:
        job = decode_job(argv[1])
        procs.tie_to_parent(job.parent_pid)
        libraries = start_operands(job)
        if libraries:  # seconds (import torch: 6 s on the H200 host) before the first other line
            report.phase("import", label=", ".join(libraries))
        preload_behind(libraries)  # the imports while the operands are made
    try:
        result = JOBS[type(job)](job, report)
    except CaseUnavailable as exc:
        report.send(Failed(str(exc)))
        return 1
    except FactoryFailed as exc:
        assert isinstance(job, ProfileJob) and job.case is not None  # the other jobs catch it case by case
        report.send(Failed(f"factory {job.case.case.factory} failed: {exc}"))
        return 1
    except Exception as exc:  # noqa: BLE001 -- anything a case does wrong becomes one line for the parent
        try:
            traceback.print_exc()
        except OSError:  # the log cannot be written (a full disk): the one line below still goes
            pass
        known = (explain.known_fault(exc, job.shape, cast(JobCase, job.case).dtype, job.device)  # a ProfileJob has its case
                 if isinstance(job, ProfileJob) else None)
        report.send(Failed(known or _describe(exc)))
        return 1
    report.send(Done(result))
    exit_now(0)
    return 0


def exit_now(code: int) -> None:
    """End the child once its result is sent, without the interpreter's teardown: unloading the libraries
    took 0.8 s a process for torch on the CPU (more with CUDA contexts), and the parent waits for the
    message pipe to close. Nothing after the result is needed; what the case started is stopped by the
    group's guardian (procs.guard_group)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
