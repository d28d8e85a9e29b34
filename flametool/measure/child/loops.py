"""The child's loops, every one of them run by active_loop (the sampler keeps only stacks inside it, found by
its name and file: protocol.ACTIVE_LOOP, ACTIVE_LOOP_FILE): warm-up, one timed loop (host clock, device
events, wall and CPU time), rounds of the cases' timed loops interleaved, the cProfile loop, and the sampled
loop that runs until the parent says stop."""

from __future__ import annotations

import cProfile
import gc
import math
import os
import select
import statistics
import sys
import traceback
from dataclasses import dataclass
from typing import Any

from ...workload.cases import Step, Sync
from ..counting import COUNT_STEPS_MIN
from ..protocol import GO, STOP, Job
from ...run.timing import MAX_LOOP_CALLS, Loops, boundedness
from .building import CASE_FAULTS, CaseUnavailable, describe
from . import ownclock
from .clocks import Events
from .reporter import Reporter


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
CPROFILE_SECONDS = 0.5
# The tests shorten the cProfile loop with this (tests/conftest.py): what they check of a profile needs calls in
# it, not half a second of them, and the suite runs some hundreds of profiled cases. Users leave it unset.
CPROFILE_SECONDS_ENV = "FLAMETOOL_CPROFILE_SECONDS"
# ... and at most this many loops of it, whatever the clock says: a step that stops a clock (its own, or one
# flametool cannot bind) would otherwise spin the loop until the watchdog (300 s)
CPROFILE_MAX_LOOPS = 1000
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



def warm_up(step: Step, sync: Sync, calls: int) -> float:
    """Returns host seconds per call including the final synchronisation (a rough rate estimate), read off
    the second half of the calls: the first calls of a shape pay for its set-up (on the H200, 50 cupy calls
    at 1024^3 read 73 us a call against 17 us after, so its loops were chosen 4x too short, and the rounds
    that run until each case has had its second of loops gave torch 4 s a process). That half is timed in two
    parts and the faster one is the rate: at a microsecond a call its 25 calls take 25 us, and one time slice
    the process lost to another (a loaded machine) read a rate 3x too slow, which chose loops a third as long
    as asked (calls_for)."""
    first = calls // 2
    sync()
    active_loop(step, first)
    sync()
    rest = calls - first
    rates = []
    for part in (rest // 2, rest - rest // 2) if rest >= 2 else (rest,):
        t0 = ownclock.perf_counter()
        active_loop(step, part)
        sync()
        rates.append((ownclock.perf_counter() - t0) / max(part, 1))
    return min(rates)



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
    c0, o0 = ownclock.process_time(), ownclock.thread_time()
    t0 = ownclock.perf_counter()
    active_loop(step, calls)
    t1 = ownclock.perf_counter()
    c1, o1 = ownclock.process_time(), ownclock.thread_time()
    if events is not None:
        end.record()
    sync()
    t2 = ownclock.perf_counter()
    ops = calls * ops_per_step(step)
    wall = (t2 - t0) * 1e6 / ops
    gpu_us = events.elapsed_ms(start, end) * 1e3 / ops if events is not None else (wall if wall_clock else None)
    return LoopTime((t1 - t0) * 1e6 / ops, gpu_us, wall, (c1 - c0) * 1e6 / ops,
                    max((c1 - c0) - (o1 - o0), 0.0) * 1e6 / ops)



def ops_per_step(step: Step) -> int:
    return int(getattr(step, "ops", 1))



def bound(loops: Loops) -> tuple[bool, str]:
    """timing.boundedness() of the medians of one case's loops so far."""
    gpu = statistics.median(loops.gpu_us) if loops.gpu_us else None
    return boundedness(statistics.median(loops.cpu_us), gpu)



_MONITORING = getattr(sys, "monitoring", None)  # 3.12+; looked up once: the check below runs under cProfile


def _profiler_tool() -> str | None:
    """The sys.monitoring tool that holds the profiler's id (Python 3.12+: cProfile's own), None before 3.12.
    Its call is flametool's own (counting.OWN_LOOPS), not the step's."""
    return _MONITORING.get_tool(_MONITORING.PROFILER_ID) if _MONITORING is not None else None


def cprofile_seconds() -> float:
    """How long the cProfile loop runs: CPROFILE_SECONDS, or FLAMETOOL_CPROFILE_SECONDS where it is set. A value
    that is not a number of seconds more than 0 and at most 60 is a ValueError of one line (the command checks it
    before anything runs: settings.case_config)."""
    text = os.environ.get(CPROFILE_SECONDS_ENV)
    if text is None:
        return CPROFILE_SECONDS
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and 0 < value <= 60):
        raise ValueError(f"{CPROFILE_SECONDS_ENV}={text!r}: must be a number of seconds, more than 0 and at most 60")
    return value


def cprofile_phase(step: Step, sync: Sync, calls: int, path: str) -> tuple[float, int, dict, str | None]:
    """(host us per call under cProfile, calls profiled, its function table, why its counts are corrupted or
    None), the profile written to `path`. A step that removes or replaces the profiling hook (sys.setprofile) or
    sets a tracing one (sys.settrace) inside the loop leaves counts that are not what a step does."""
    # a loop of whole 16s: its Python calls per step, like the counted loop's windows (counting.count_steps), hold
    # whole periods of work that repeats every 2, 4, 8 or 16 calls; at 250 calls a loop a step making 1/4 read
    # 63/250 here and 1/4 per line, so its lines were left out as not summing to the step's
    calls = calls // COUNT_STEPS_MIN * COUNT_STEPS_MIN if calls >= COUNT_STEPS_MIN else calls
    profiler = cProfile.Profile()
    total_calls = 0
    host = 0.0
    corrupted: str | None = None
    tracer = sys.gettrace()
    # garbage left by what ran before (the set-up, the loops before this one) is collected now, not inside the
    # profiled loop: a finalizer it runs there is a Python call the step did not make, and the counts from this
    # table must be the step's own, to the call (six cyclic objects with __del__ left before it read 7 calls a
    # step where the step makes 4; the counted loop's windows collect before they start too)
    gc.collect()
    deadline = ownclock.perf_counter() + cprofile_seconds()
    while True:
        sync()
        t0 = ownclock.perf_counter()
        profiler.enable()
        # what profiling put in place: on 3.11 the profile hook is the profiler; from 3.12 cProfile is a
        # sys.monitoring tool and sys.getprofile() stays as it was (a step's sys.setprofile(None) then removes
        # nothing of it, but a step that frees the tool does)
        expected, tool = sys.getprofile(), _profiler_tool()
        active_loop(step, calls)
        hook: object = sys.getprofile()
        traced = sys.gettrace()
        tool_after = _profiler_tool()
        profiler.disable()
        if corrupted is None and (hook is not expected or tool_after != tool):
            corrupted = ("step() removed the profiling hook (sys.setprofile(None))" if hook is None or
                         tool_after is None else
                         f"step() replaced the profiling hook (sys.setprofile({type(hook).__name__}))")
        elif corrupted is None and traced is not tracer:
            corrupted = "step() changed the tracing hook (sys.settrace)"
        sys.settrace(tracer)  # as it was, for the loops after this one
        host += ownclock.perf_counter() - t0
        sync()
        total_calls += calls
        if ownclock.perf_counter() >= deadline or total_calls >= calls * CPROFILE_MAX_LOOPS:
            break
    try:
        profiler.dump_stats(path)
    except OSError as exc:  # a full disk: one line, and no half-written profile left
        try:
            os.unlink(path)
        except OSError:
            pass
        raise CaseUnavailable(f"{path}: cannot be written ({exc.strerror or exc})") from None
    return host * 1e6 / (total_calls * ops_per_step(step)), total_calls, profiler.stats, corrupted



_read_ahead = b""  # what read_job read past its line (entry.read_job)
CONTROL = 0  # the parent's pipe (its job, OPEN, GO, stop): fd 0 until own_control() moves it


def own_control() -> None:
    """The parent's pipe moved off fd 0 to a descriptor of its own (not inherited by what a case starts), and
    /dev/null put in its place: a case that reads stdin (input(), sys.stdin.read()) reads an end of file at once,
    where it took the parent's GO and stop and then waited for the 300 s watchdog."""
    global CONTROL
    if CONTROL != 0:
        return
    CONTROL = os.dup(0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)


def keep_read(data: bytes) -> None:
    global _read_ahead
    _read_ahead += data


def _stop_requested() -> bool:
    if STOP.strip() in _read_ahead:
        return True
    ready, _, _ = select.select([CONTROL], [], [], 0)
    if not ready:
        return False
    data = os.read(CONTROL, 64)
    return data == b"" or STOP.strip() in data


def wait_go() -> bool:
    """A child given its job ahead of its turn (ProfileJob.ahead) waits here, set up and warmed up, until the
    parent writes GO on its stdin; False when the parent closed it instead (the run stops, or no turn came)."""
    global _read_ahead
    while b"\n" not in _read_ahead:
        data = os.read(CONTROL, 64)
        if not data:
            return False
        _read_ahead += data
    line, _, _read_ahead = _read_ahead.partition(b"\n")
    return line.strip() == GO.strip()



def sampled_phase(step: Step, sync: Sync, calls: int, max_seconds: float) -> list[list[float]]:
    """Run the active loop in chunks until the parent says stop; timestamps are CLOCK_MONOTONIC
    (time.monotonic), which the parent reads too, so it can tell which chunks py-spy was attached for."""
    chunks: list[list[float]] = []
    deadline = ownclock.monotonic() + max_seconds
    while True:
        t0 = ownclock.monotonic()
        active_loop(step, calls)
        t1 = ownclock.monotonic()
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



def interleaved(made: dict[str, tuple[Step, Sync]], calls: dict[str, int], repeats: int, events: Events | None,
                report: Reporter, shape: list[int], errors: dict[str, str], extend: float,
                watch: ownclock.Watch | None = None) -> dict[str, Loops]:
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
            t0 = ownclock.perf_counter()
            try:
                t = timed_loop(step, sync, calls[label], events)
            except CASE_FAULTS as exc:  # noqa: BLE001 -- one case's fault ends that case, not the others
                traceback.print_exc()
                errors[label] = describe(exc)
                continue
            spent[label] += ownclock.perf_counter() - t0
            if watch is not None:
                watch.check(label)
            if t.cpu <= 0:  # a clock that did not move measured nothing (run.json refuses a loop of 0 us)
                errors[label] = (f"the host clock did not move over {calls[label]} calls of step() (a clock "
                                 "flametool cannot bind was stopped?)")
                continue
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
