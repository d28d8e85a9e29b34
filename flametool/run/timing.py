"""A case's timed loops: one process's loops (Loops), a case's loops at one shape in every process (Timing), and
the host-bound rule read from them."""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass, field, fields, is_dataclass
from typing import Any

from .reader import MAX_NUMBER, MIN_NUMBER, Reader, all_numbers, is_count

# The GPU is "well above" the host when its time per call exceeds the host's by this factor; below it,
# the GPU waited on the CPU and launch cost sets the pace.
HOST_BOUND_FACTOR = 1.2

# How a timing process was started (Loops.started; measure/protocol.STARTED says the same to the parent).
STARTED = ("fresh", "forked")


def boundedness(cpu_us: float, gpu_us: float | None) -> tuple[bool, str]:
    """(host-bound?, why) of a case's host and device time per call: the rule compare and sweep share."""
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


def host_bound(timing: Timing) -> bool | None:
    """compare's rule (boundedness) on the medians of every process's loops; None without loops."""
    cpu = timing.median("cpu_us")
    return boundedness(cpu, timing.median("gpu_us"))[0] if cpu is not None else None


# A timed loop runs at most this many calls (the child's calls_for; balanced_calls)
MAX_LOOP_CALLS = 100_000
# Calls per loop are balanced (balanced_calls) only up to loops this many times shorter than the seconds each case
# is timed for: a case whose loop is long (one left GPU-bound at the sample shape) does not stretch the others'.
BALANCED_ROUNDS = 20


def balanced_calls(calls: dict[str, int], seconds_per_call: dict[str, float], seconds: float) -> dict[str, int]:
    """Calls per loop that make each case's loop about as long as the longest one's (at most `seconds` /
    BALANCED_ROUNDS): a faster case gets more calls, never fewer than it had, at most MAX_LOOP_CALLS. Rounds of
    paired loops go on until each case has been timed for `seconds`, so with loops of unequal length the slower case's
    rounds run on past its own seconds until the faster one has had its: on the H200 (2026-12-03) cupy's 4.4 ms
    loops beside torch's 3.0 ms (250 calls each at 1024^3) took 2.47 s a process for 1 s of each. Balanced,
    every round pairs loops of one length and the rounds end when both have had theirs (2 s)."""
    known = {label: s for label, s in seconds_per_call.items() if label in calls and s > 0}
    if len(known) < 2:
        return dict(calls)
    longest = min(max(calls[label] * s for label, s in known.items()), seconds / BALANCED_ROUNDS)
    return {label: max(n, min(MAX_LOOP_CALLS, round(longest / known[label]))) if label in known else n
            for label, n in calls.items()}


def record_dict(obj: Any, own: tuple[str, ...] = ()) -> dict:
    """asdict(obj), but with its fields in `own` as they are (the caller writes those by their own to_json), and a list
    of numbers copied as a list: asdict deep-copies every figure of a run's loops, one call each (0.26 s of a 0.38 s
    run.json save of a 28 + 28 process --env run on the CPU machine, and compare saves after every process)."""
    return {f.name: getattr(obj, f.name) if f.name in own else _plain(getattr(obj, f.name)) for f in fields(obj)}


def _plain(value: Any) -> Any:
    if is_dataclass(value) and not isinstance(value, type):
        return asdict(value)
    if isinstance(value, (list, tuple)):
        if value and isinstance(value[0], (int, float, str)) and not isinstance(value[0], bool):
            return list(value)
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


@dataclass
class Loops:
    """One process's timed loops of one case at one shape: one figure per loop, us per operation: the host's
    (cpu_us), the device's (gpu_us, by events) and the wall time to the synchronisation after the loop
    (wall_us; runs before 2026-11-30 did not record it). ``slots`` is each loop's place in that process's
    sequence of loops at this shape (all cases counted), so the interleaving can be read back."""

    cpu_us: list[float]
    gpu_us: list[float] = field(default_factory=list)
    slots: list[int] = field(default_factory=list)
    wall_us: list[float] = field(default_factory=list)
    # CPU time of every thread of the process during each loop, us per operation (the caller's and its
    # workers': jax hands each call to threads of its own); runs before 2026-12-01 did not record it
    all_threads_us: list[float] = field(default_factory=list)
    # of those, the threads other than the caller: all threads' CPU time minus the caller's own (thread_time);
    # schema 3 (runs before it: none)
    other_threads_us: list[float] = field(default_factory=list)
    # how the process that ran them was started: "fresh" (an interpreter of its own) or "forked" (from a fork
    # server that had imported the libraries, measure/forking.py); None: not said (runs before 2026-12-02, and
    # the loops of a profiled process or a sweep, which always start fresh)
    started: str | None = None
    # forked: the pid of the fork server that forked it, so the processes of one server can be told from another's
    # (a server's children share its imports' memory layout; --forks-per-server draws new ones)
    forked_from: int | None = None
    # operations per loop where this process ran other than its Timing's `calls`: a host-bound requested shape's
    # processes after the first run balanced calls (balanced_calls; the first ran --iters); None: the Timing's
    calls: int | None = None

    def to_json(self) -> dict:
        data = record_dict(self)
        for key in ("started", "forked_from", "calls"):  # loops that do not say read as before
            if data[key] is None:
                data.pop(key)
        return data

    @classmethod
    def from_json(cls, r: Reader) -> "Loops":
        slots = r.get("slots", lambda v: isinstance(v, list) and all(is_count(x) for x in v), "a list of counts", [])
        # a loop's host time is never 0: a clock that did not move measured nothing (docs: below 1e-6 us refused)
        cpu = r.get("cpu_us", lambda v: isinstance(v, list) and all_numbers(v, positive=True),
                    f"a list of numbers, times per call from {MIN_NUMBER:g} to {MAX_NUMBER:g} us (a loop is never 0 us)", [])
        started = r.get("started", lambda v: v in STARTED, " or ".join(map(repr, STARTED)))
        return cls([float(x) for x in cpu], r.numbers("gpu_us"), slots, r.numbers("wall_us"),
                   r.numbers("all_threads_us"), r.numbers("other_threads_us"), started, r.count("forked_from"),
                   r.count("calls"))

    def figures(self, metric: str) -> list[float]:
        """The loops' figures of one kind: "cpu_us", "gpu_us" or "wall_us"."""
        return getattr(self, metric)


@dataclass
class Timing:
    """A case's timed loops at one shape, in every process that ran them (the seed's method in each:
    host clock and device events around ``calls`` operations)."""

    shape: list[int]
    calls: int  # operations per loop (the first process's; a later one's own where it ran other: Loops.calls)
    processes: list[Loops]
    host_bound: bool | None = None
    bound_note: str | None = None

    def loops(self, metric: str = "cpu_us") -> list[float]:
        return [v for p in self.processes for v in p.figures(metric)]

    def median(self, metric: str = "cpu_us") -> float | None:
        loops = self.loops(metric)
        return statistics.median(loops) if loops else None

    @property
    def cpu_loops(self) -> list[float]:
        return self.loops("cpu_us")

    @property
    def gpu_loops(self) -> list[float]:
        return self.loops("gpu_us")

    @property
    def cpu_us_per_call(self) -> float | None:
        return self.median("cpu_us")

    @property
    def gpu_us_per_call(self) -> float | None:
        return self.median("gpu_us")

    @property
    def process_medians(self) -> list[float]:
        return [statistics.median(p.cpu_us) for p in self.processes if p.cpu_us]

    def to_json(self) -> dict:
        return record_dict(self, ("processes",)) | {"processes": [p.to_json() for p in self.processes]}

    @classmethod
    def from_json(cls, r: Reader) -> "Timing":
        return cls(shape=r.shape("shape") or [], calls=r.count("calls", 0),
                   processes=[Loops.from_json(p) for p in r.items("processes")],
                   host_bound=r.flag("host_bound"), bound_note=r.text("bound_note"))
