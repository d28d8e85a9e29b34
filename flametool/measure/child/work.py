"""The child's three jobs, each a function of its job and the reporter that returns the result Done carries:
time_cases (a group's cases side by side, their loops interleaved, at each shape of the plan), sweep_cases
(the same at each size of a sweep) and profile_case (one case alone: its own loops, the cProfile loop, the
sampled loop, the counted loop)."""

from __future__ import annotations

import gc
import math
import os
import sys
import traceback
from typing import Callable, cast

from ...workload import ops
from .. import counting, explain
from ...run import steptrace
from ...run.counts import Counts
from ...workload.cases import Step, Sync, cuda_index
from ..protocol import (MAX_PATHS, CaseProfiled, CaseTimed, JobCase, PlanItem, Point, PointCase, ProfileJob, SampleReady,
    SweepJob, Swept, Timed, TimedLoops, TimeJob)
from ...run.record import DeviceInfo, Operands
from ...run.timing import Loops, balanced_calls
from .building import CASE_FAULTS, CaseUnavailable, build, describe, load_factory, read_again, set_up
from . import ownclock
from .clocks import Events, device_events, device_info
from .loops import (bound, calls_for, cprofile_phase, extend_seconds, interleaved, ops_per_step, sampled_phase, wait_go,
    warm_up)
from .reporter import Reporter


def choose_sample_shape(requested: list[int] | None, shape: list[int], host_bound: bool,
                        op: str = "matmul") -> tuple[list[int], str]:
    """One sample shape for every case of a process, so that the cases compared are sampled alike: the op's
    host-bound shape (ops.py) where the requested one is not host-bound."""
    if requested:
        return list(requested), "given with --sample-shape"
    if host_bound:
        return list(shape), "the requested shape is host-bound, so it is sampled as is"
    if op not in ops.OPS:  # a workload (workloads.py): its own shape is the one it was written for
        return list(shape), ("the requested shape is not host-bound, and a workload is sampled at its shape "
                             "(--sample-shape chooses another)")
    fallback = ops.host_bound_shape(op, "cuda")
    if list(fallback) == list(shape):  # already the host-bound size: sampled as is, whatever the case's GPU hides
        return list(shape), (f"the requested shape is the op's host-bound size {','.join(map(str, shape))}, where "
                             "launches are sampled; not every case is host-bound even there")
    return list(fallback), (
        f"the requested shape {','.join(map(str, shape))} is not host-bound (the GPU hides launch cost), so "
        f"launches are sampled at the host-bound shape {','.join(map(str, fallback))}"
    )



def time_cases(job: TimeJob, report: Reporter) -> Timed:
    """The timed phase of one process: every case of the group built side by side and their loops
    interleaved, at each shape of the plan. With ``decide``, the first process of a group times the
    requested shape, says which cases are host-bound, and picks the one shape all of them are sampled at."""
    out = Timed(cases={c.label: CaseTimed() for c in job.cases})
    errors = out.errors
    watch = ownclock.Watch()
    events: Events | None = None
    plan = list(job.plan)
    while plan:
        item = plan.pop(0)
        shape = item.shape
        operands: dict[str, Operands] = {}
        given = item.calls or {}
        rates: dict[str, float] = {}

        def choose(label: str, per_step: float, steps: int) -> int:
            # --iters counts operations at the requested shape; elsewhere a loop runs long enough to be read
            rates[label] = per_step
            return given.get(label) or (steps if item.key == "timing" else
                                        calls_for(per_step, steps, extend_seconds(job)))

        made, calls, ops = ready(job.cases, shape, job, report, errors, operands, choose, watch=watch)
        if not made:
            break
        if item.key != "timing" and not given and extend_seconds(job):
            # loops of one length at the sample shape (timing.balanced_calls: the rounds end sooner); the processes
            # after this one are given these calls
            calls = balanced_calls(calls, {l: rates[l] for l in made if l in rates}, extend_seconds(job))
        for label, found in operands.items():
            out.cases[label].operands.append(found)
        if events is None:  # every case built: every library imported
            events = device_events(job.device)
            info = device_info(job.device, events)
            for label in out.cases:
                out.cases[label].device_info = info
        for label in made:
            out.cases[label].ops_per_step = ops[label]
        loops = interleaved(made, calls, job.repeats, events, report, shape, errors, extend_seconds(job), watch)
        read_again(made, operands, errors)
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
        if item.decide:
            ok = [l for l in out.cases if l not in errors and out.cases[l].timing is not None]
            host_bound = all(cast(TimedLoops, out.cases[l].timing).host_bound for l in ok)  # ok: timed
            sample_shape, reason = choose_sample_shape(job.sample_shape, shape, host_bound, job.op)
            out.sample_shape, out.sample_shape_reason = sample_shape, reason
            if sample_shape != shape:
                plan.insert(0, PlanItem(sample_shape, None, "sample_timing"))
        # these operands freed before the next shape's (the seed's: three copies of 3.8 GB on the GPU); not after the
        # last, where the process reports and ends: a collection took 50-70 ms with numpy and torch imported (the CPU
        # machine, 2026-12-04), on the way to the next process's turn
        if plan:
            gc.collect()
    before = ownclock.not_builtin()
    for label in out.cases:
        out.cases[label].warnings = ([f"{', '.join(before)} replaced before flametool's child started (a "
                                      "sitecustomize?): its timings were read on them"] if before else []) + \
            watch.warnings.get(label, [])
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
          seconds: float | None = None,
          watch: ownclock.Watch | None = None) -> tuple[dict[str, tuple[Step, Sync]], dict[str, int], dict[str, int]]:
    """Each case built (build) and warmed up (warm_all) before the next is built, so that a library still
    importing behind (preload_behind) is waited for only by its own case. Returns (made, calls, ops)."""
    made: dict[str, tuple[Step, Sync]] = {}
    calls: dict[str, int] = {}
    ops: dict[str, int] = {}
    for c in cases:
        one = build([c], shape, job.device, report, errors, operands)
        try:
            got_calls, got_ops = warm_all(one, job, report, choose, seconds)
        except CASE_FAULTS as exc:  # noqa: BLE001 -- one case's fault ends that case, not the process (as in its loops)
            # said as the case's own (a build whose step raises: "the process shared with torch@C failed" had named
            # no case; only the log's traceback said whose step it was)
            traceback.print_exc()
            errors[c.label] = (explain.known_fault(exc, shape, c.dtype, job.device)
                               or f"step() raised in its warm-up: {describe(exc)}")
            if operands is not None:
                operands.pop(c.label, None)
            continue
        if watch is not None:  # its factory and its warm-up are the case's own code
            watch.check(c.label)
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
        read_again(made, operands, errors)
        # each size as soon as it is measured: a run stopped at a later size keeps it
        report.send(Point(i, ops_by_case, info, {
            c.label: PointCase(error=errors[c.label]) if c.label in errors else
            PointCase(None, calls[c.label] * ops_by_case[c.label], calls[c.label], loops[c.label],
                      operands.get(c.label))
            for c in todo}))
        del made
        if i + 1 < len(job.points):  # freed before the next size's; after the last, the process reports and ends
            gc.collect()
    return Swept(len(job.points))



def profile_case(job: ProfileJob, report: Reporter) -> CaseProfiled:
    """The profiled process of one case, at the sample shape: set up and warmed up (given ahead of its turn: then
    it waits for the parent's GO), its own unsampled loops when it is not sampled (a sampled one's unsampled time
    per call is read off its sampled loop after py-spy's window: profiling.unsampled), the loop py-spy samples until
    the parent says stop, then the cProfile loop and the counted loop. After the sampled loop they run beside the
    next case's turn (the parent tells it GO as this one is told to stop), not before the parent can move on; the
    last case given its job ahead (count_first) runs them before its turn instead."""
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
    first = job.ahead and job.count_first and job.sample  # its loops but the sampled one before its turn
    if job.ahead and not first:
        wait_turn(report)
    result = CaseProfiled(Loops(cpu_us=[]), steps * ops,
                          sys_path=[p for p in sys.path if p and "\0" not in p][:MAX_PATHS])
    if not job.sample:
        errors: dict[str, str] = {}
        result.own = interleaved({c.label: (step, sync)}, {c.label: steps}, job.repeats, events, report, shape, errors,
                                 extend_seconds(job))[c.label]
        if errors:  # the loop raised; interleaved made its message
            raise CaseUnavailable(errors[c.label])

    def profile_and_count() -> None:
        report.phase("cprofile")
        result.cprofile_us_per_call, result.cprofile_calls, table, corrupted = cprofile_phase(step, sync, steps,
                                                                                              job.prof_path)
        if job.count:  # after the cProfile loop, whose table gives its Python calls
            report.phase("count")
            result.counts = counted_loop(step, sync, steps, job.device, ops, table, result.cprofile_calls, c.label,
                                         str(steptrace.path_for(job.prof_path)) if job.prof_path else None,
                                         detach=first)
            result.counts.corrupted = corrupted

    if first:
        # CUPTI's tracing is set up and torn down before the sampled loop, and CUPTI detached (left attached with its
        # tracing off it stayed in every API call's path: tracers.CuptiTracer.close), so that its library puts no
        # frame in the stacks sampled after it (tests/test_gpu.py, on the GPU)
        profile_and_count()
        wait_turn(report)
    if job.sample:
        report.send(SampleReady(os.getpid()))
        result.chunks = sampled_phase(step, sync, steps, job.max_sample_seconds)
        result.calls_per_chunk = steps * ops
    if not first:  # CUPTI's tracing set up and torn down after every other loop of the process
        profile_and_count()
    return result


def wait_turn(report: Reporter) -> None:
    """A process given its job ahead of its turn: ready, then waiting for the parent's GO."""
    report.phase("ready")
    if not wait_go():
        raise CaseUnavailable("stopped before its turn came")



def counted_loop(step: Step, sync: Sync, steps: int, device: str, ops: int, table: dict, profiled: int,
                 label: str = "", timeline_to: str | None = None, detach: bool = False) -> Counts:
    """counting.count() of the case; a counted loop that fails is one line in its record, not a failed case.
    `timeline_to`: where one step's CUPTI records go (LABEL.timeline.json beside LABEL.prof); `detach`: CUPTI
    detached after it (a sampled loop follows)."""
    try:
        return counting.count(step, sync, counting.count_steps(steps), device, ops, python=(table, profiled),
                              label=label, timeline_to=timeline_to, detach=detach)
    except Exception as exc:  # noqa: BLE001 -- the other loops' figures stand without the counts
        return Counts(steps=0, python_steps=profiled, tallies=counting.python_tallies(table, profiled),
                      missing=[f"the counted loop failed: {describe(exc)}"], ops_per_step=ops)
