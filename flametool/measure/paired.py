"""compare's timed loops: every case of a group in each of its processes, their loops interleaved (child
time job). The first process of a group times the requested shape and chooses the sample shape; processes 2..N
time that shape, more of them while a pair's ratio has not settled (SETTLED); with `compare --env` each
environment is a group and the groups take turns."""

from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, cast

from . import sidebyside
from .spawn import Forker, Progress, Spare, Started, first_child, run_child
from .config import SETTLED, Config  # when a pair's ratio has settled (set beside the defaults)
from .jobs import as_timing, job_base, job_case, others
from .measurement import Measurement, stop_if_failed
from ..run import anchoring, rundir, stats
from ..workload import ops
from ..workload.cases import CaseSpec
from .protocol import Phase, PlanItem, Timed, TimeJob
from ..run.profiled import Sampling
from ..run.record import Group, Run, TimingStop
from ..run.timing import Timing, balanced_calls, host_bound

# A pair's ratio has settled when its 95% interval reaches no further than this from it.
# ... and a pair of two environments (compare --env: a build against another, anchored) when it reaches no
# further than this. Such a comparison is there to resolve a change of a microsecond or so: at ±2% the 1 us
# plant of benchmarks/envs.py read half-widths of 0.46-0.54 us where cupy took 24-26 us a call (the H200,
# 2026-12-01); ±1.75% is 0.49 us at 28 us, the slowest the host has run it.
# A group whose timing processes after the first died this many times adds no more: each was one process lost
# (the OOM killer, a flaky sitecustomize), but a group that loses every one would otherwise run to its budget.
MOST_LOST = 3
# The first process of a group at a shape whose operand values take seconds to make (the seed's product: 1.9
# billion values, 1.3 s on the H200 host's 16 threads) starts fresh: it makes them while it imports
# (preload.start_operands), where a forked one would start them only after its fork server's imports. The
# processes after it (the sample shape) are forked.
FRESH_FIRST_VALUES = 10**8


def operand_values(shape: list[int]) -> int:
    """The built-in cases' operand values at `shape` (inputs.prefetch_shape: a M x K and b K x N; or 2 x N)."""
    return shape[0] * shape[1] + shape[1] * shape[2] if len(shape) == 3 else 2 * math.prod(shape)


def spare_firsts(config: Config) -> bool:
    """Whether the first processes of the groups after the first are started ahead (spawn.Spares.start_for_compare):
    with --env, where each environment's first process would otherwise import after the one before has ended; not
    at a shape whose operand values take seconds to make (a fresh first process makes them while it imports)."""
    return bool(config.environments) and operand_values(config.shape) < FRESH_FIRST_VALUES


def process_name(i: int, asked: int) -> str:
    """Process i of the `asked` (--processes), or one of the more added after them: "process 3 of 5", "process 7
    (2 more after the 5 asked for)"."""
    return f"process {i} of {asked}" if i <= asked else f"process {i} ({i - asked} more after the {asked} asked for)"


def time_group(m: Measurement, cases: list[CaseSpec], reason: str, more: bool = True) -> list[tuple[CaseSpec, str]]:
    """The timed loops of `cases` in config.processes processes (more=False: the first only; time_envs runs
    the others). Returns the cases to time again alone (they could not be built beside the others, or the
    shared process failed), with why."""
    m.spares.settle()  # the spares an earlier group left are gone before this one's loops
    first = _first(m, cases, reason)
    got, error = _run_first(m, first)
    return _record_first(m, first, got, error, more)


@dataclass
class First:
    """A group's first process, ready to run: its group (in run.groups), its job (the requested shape, and the
    choice of the sample shape), its log and progress, the spare started for it (or None) and the processes of
    it lost so far (each died before reporting: another takes its place)."""

    group: Group
    cases: list[CaseSpec]
    job: TimeJob
    name: str
    log: Path
    say: Callable[[str], None]
    child: Started | None  # started (_start_first; _run_firsts starts each before any runs), or None
    spare: Spare | None
    lost: list[str] = field(default_factory=list)
    forks: Forker | None = None  # the fork server its child was asked of (--fork-processes)
    # ended (sidebyside.run_all, on Ctrl-C): the child it ran is not one lost, started again in its place (that one
    # ran its loops to their end, 10 s at --iters 400000, while Ctrl-C waited for its thread)
    ended: bool = False

    def progress(self, _label: str, what: str) -> None:
        self.say(what)

    def end(self) -> None:
        """Stop its child (sidebyside.run_all, on Ctrl-C), the one it runs now, and start no other."""
        self.ended = True
        if self.child is not None:
            self.child.end()


def _first(m: Measurement, cases: list[CaseSpec], reason: str, progress: Progress | None = None) -> First:
    config, run = m.config, m.run
    if getattr(m, "timing_started", None) is None:
        m.timing_started = time.monotonic()  # --budget counts from the first timing process
    group = Group([c.label for c in cases], len(cases) > 1, reason)
    run.groups.append(group)
    for c in cases:
        run.results[c.label].group = len(run.groups) - 1
    name = rundir.group_stem(group.cases)
    job = TimeJob(**job_base(config), cases=[job_case(c, config) for c in cases], sample_shape=config.sample_shape,
                  plan=[PlanItem(config.shape, None, "timing", decide=True)], op=config.op)
    tell = progress or m.progress
    say = lambda what: tell(f"timing {name}", f"process 1/{config.processes}: {what}")  # noqa: E731
    log = m.out / f"{name}-timing.log"
    spare = m.spares.take(log, [c.label for c in cases])  # started ahead (spare_firsts), or None
    return First(group, cases, job, name, log, say, None, spare)


def _run_first(m: Measurement, first: First) -> tuple[Timed | None, str | None]:
    """The group's first process, run to its end; one that died before reporting is one process lost, and
    another takes its place (at most MOST_LOST)."""
    config = m.config
    while True:
        if first.child is None:
            _start_first(m, first)
            if first.ended:  # ended while it started (on a thread of its own: _run_firsts)
                first.end()
                return None, "stopped"
        got, error, _ = run_child(first.job, config, first.name, first.log, first.progress, started=first.child,
                                  forks=first.forks, on_phase=lambda msg: _set_up(m, msg))
        m.spares.start_deferred()  # if its set-up never ended: it is over now
        first.spare = first.child = None  # a first process lost is started afresh
        if first.ended:  # stopped on Ctrl-C: not lost; the main thread raises the interrupt
            return got, error
        # a first process that died (os._exit in a sitecustomize, the OOM killer's SIGKILL) is one process lost,
        # as a later one is: another takes its place (at most MOST_LOST); one that reported a failure is not
        if got is not None or not died(error) or len(first.lost) + 1 >= MOST_LOST:
            return got, error
        first.lost.append(f"{process_name(1, config.processes)}: {error}")


def _set_up(m: Measurement, msg: Phase) -> None:
    """A first process's progress: once it warms up its set-up is over, and the spares left for later start."""
    if msg.phase == "warmup":
        m.spares.start_deferred()


def defer_spares(config: Config) -> bool:
    """Whether the spares past the next ones start only when the first process's set-up is over (Spares.start_for_compare):
    at a requested shape whose values take seconds to make, beside loops that take longer than the spares' imports."""
    return operand_values(config.shape) >= FRESH_FIRST_VALUES


def _start_first(m: Measurement, first: First) -> None:
    """Its child: the spare started for it, forked, or fresh. The fork server is asked once a process (asked
    again after the fork, a server at --forks-per-server would retire under its child)."""
    config = m.config
    first.forks = m.forks.get(first.cases) if operand_values(config.shape) < FRESH_FIRST_VALUES else None
    first.child = first_child(first.job, config, first.name, first.log, first.progress, first.spare, first.forks)


def _record_first(m: Measurement, first: First, got: Timed | None, error: str | None,
                  more: bool) -> list[tuple[CaseSpec, str]]:
    """What a group's first process measured, in its cases' results (the sample shape it chose, the calls per
    loop the processes after it run); run.json saved. Returns the cases to time again alone, with why."""
    config, run = m.config, m.run
    group, cases, paired = first.group, first.cases, first.group.paired
    if got is None:
        if paired:
            _drop(run, group)  # nothing was measured together: each case gets a group of its own
            return [(c, f"the process shared with {others(c, cases)} failed ({error}); timed alone") for c in cases]
        run.results[cases[0].label].error = error
        return []
    retry: list[tuple[CaseSpec, str]] = []
    for c in cases:
        r = run.results[c.label]
        mine = got.cases[c.label]
        failed = got.errors.get(c.label)
        if failed and paired:
            retry.append((c, f"could not be built or run beside {others(c, cases)} ({failed}); timed alone"))
            group.cases.remove(c.label)
            r.group = None
            continue
        if failed:
            r.error = failed
            continue
        r.ops_per_step = 1 if mine.ops_per_step is None else mine.ops_per_step
        r.warnings += [w for w in mine.warnings if w not in r.warnings]
        r.device_info = mine.device_info
        r.operands = list(mine.operands)
        assert mine.timing is not None  # a case that did not fail was timed at the requested shape
        r.timing = as_timing(mine.timing, got.process())
        r.sample_shape, r.sample_shape_reason = got.sample_shape, got.sample_shape_reason
        if mine.sample_timing is not None:
            r.sample_timing = as_timing(mine.sample_timing, got.process())
        m.steps[c.label] = (mine.sample_timing or mine.timing).steps
    if not group.cases:  # every case is to be timed alone: nothing was measured together
        _drop(run, group)
        return retry
    _balance_requested(m, group)
    group.paired = len(group.cases) > 1
    if paired and not group.paired:
        group.reason = "alone: the other cases of the run could not share its processes"
    group.processes = 1
    group.lost += first.lost
    m.save()
    if more:
        if retry and not config.keep_going:
            # a case that failed beside the others is tried alone before their later processes: where it fails
            # alone too (a factory that raises, a library not installed) the run stops after one process of
            # theirs, not all of them (a first case of one's own failed 12 s into a CPU run, numpy and torch
            # timed in 8 processes first; on a GPU each of those processes imports for seconds)
            for case, why in retry:
                time_group(m, [case], why)
            stop_if_failed(run, config)
            retry = []
        more_processes(m, [group])
    return retry


def _balance_requested(m: Measurement, group: Group) -> None:
    """Where the group's processes after the first time the requested shape (host-bound: it is the sample shape),
    their calls per loop balanced by the first process's times per call (timing.balanced_calls: loops of one
    length, so the rounds end when each case has had its seconds). The first process ran --iters calls of each:
    it could not know the shape was host-bound until it had timed it. At another sample shape the first process
    balanced its own loops there (child.work.time_cases), which the later ones are given as they are."""
    config, run = m.config, m.run
    live = [l for l in group.cases if run.results[l].error is None and l in m.steps]
    timings = [run.results[l].timing for l in live]
    if (len(live) < 2 or not config.extend_rounds or any(run.results[l].sample_timing is not None for l in live)
            or any(t is None or not host_bound(t) for t in timings)):
        return
    per_step = {}
    for label, t in zip(live, timings):
        assert t is not None  # checked above
        median = t.median("cpu_us")
        if median:
            per_step[label] = median * run.results[label].ops_per_step / 1e6
    m.steps.update(balanced_calls({l: m.steps[l] for l in live}, per_step, config.timed_seconds))


def _drop(run: Run, group: Group) -> None:
    """A group that measured nothing together, out of run.groups: the results of the groups after it renumbered."""
    index = next(k for k, g in enumerate(run.groups) if g is group)
    run.groups.pop(index)
    for r in run.results.values():
        if r.group is not None and r.group > index:
            r.group -= 1
        elif r.group == index:
            r.group = None


def died(error: str | None) -> bool:
    """Whether a child's error says it ended before reporting (spawn.ended_early's words), not that it failed."""
    return error is not None and "before reporting" in error


def more_processes(m: Measurement, groups: list[Group]) -> None:
    """Processes 2..N of each group: the loops at the sample shape only (the requested shape, when it is
    not host-bound, holds the GPU for seconds a loop and is timed in the first process alone). Several
    groups (the environments of `compare --env`) take turns, A B, B A, A B, ...: neither is always first,
    so a drift of the host over the run falls on both alike."""
    try:
        _processes_after_the_first(m, groups)
    finally:
        for group in groups:  # the ratios settled before these were needed: stopped beside what follows, which
            m.spares.stop(f"{rundir.group_stem(group.cases)}-timing-", wait=False)  # waits for them before it measures


def _processes_after_the_first(m: Measurement, groups: list[Group]) -> None:
    config = m.config
    assert config.max_processes is not None  # Config.__post_init__ sets it
    started = time.monotonic()
    first = getattr(m, "timing_started", None) or started  # when the first timing process started
    step = 0.0  # the longest round so far: the budget is not overrun by one more
    # --processes-at-once K: a round is the next K // len(groups) processes of every group (at least one), all run
    # at once; K = 1 (the default): one process at a time, the groups taking turns
    per_round = max(1, config.at_once // max(1, len(groups)))
    i = 1
    while i < config.max_processes:
        live = [l for g in groups for l in _live(m, g)]
        if not live:
            return
        now = time.monotonic()
        spent = (now + step - first > config.budget if config.budget is not None
                 else now - started > config.extra_seconds)
        if i >= config.processes and (spent or settled(m, live, config.max_processes)):
            _stopped(m, live, "budget" if spent else "spread")
            return
        last = min(i + per_round, config.max_processes)
        tasks = [(group, j) for j in range(i + 1, last + 1) for group in (groups if j % 2 else groups[::-1])]
        for k in range(0, len(tasks), config.at_once):
            _at_once(m, tasks[k:k + config.at_once])
        i = last
        step = max(step, time.monotonic() - now)
    live = [l for g in groups for l in _live(m, g)]
    if live and config.max_processes > config.processes:  # not --processes N alone: N exactly was asked for
        _stopped(m, live, "most")


def _live(m: Measurement, group: Group) -> list[str]:
    if len(group.lost) >= MOST_LOST:
        return []
    return [l for l in group.cases if m.run.results[l].error is None and l in m.steps]


@dataclass
class Prepared:
    """Process i of a group, ready to run: its job, the cases it times, its child (started, a spare given the job,
    or forked) and what its progress lines say."""

    group: Group
    i: int
    live: list[str]
    key: str  # the loops it adds to: "timing" (the sample shape is the requested one) or "sample_timing"
    job: TimeJob
    name: str
    log: Path
    child: Started
    say: Progress
    forks: Forker | None  # its fork server (--fork-processes), which run_child starts a fresh one for if it dies


def _at_once(m: Measurement, tasks: list[tuple[Group, int]]) -> None:
    """Each task's process; more than one: all at once (--processes-at-once, measure/sidebyside.py), what they
    measured recorded here in the tasks' order once every one has ended."""
    say = sidebyside.locked(m.progress) if len(tasks) > 1 else m.progress
    ready = sidebyside.started_all([functools.partial(_prepare, m, group, i, say) for group, i in tasks],
                                   lambda r: r.child.discard())
    got = sidebyside.run_all([r.child for r in ready], [functools.partial(_run, m, r) for r in ready])
    for r, result in zip(ready, got):
        _record(m, r, result)
    if ready:  # once for the processes that ended together (a save of a 28 + 28 --env run took 0.1 s on the CPU)
        m.save()


def _run(m: Measurement, ready: Prepared) -> tuple[Timed | None, str | None, Sampling | None]:
    return run_child(ready.job, m.config, ready.name, ready.log, ready.say, started=ready.child, forks=ready.forks)


def _prepare(m: Measurement, group: Group, i: int, progress: Progress | None = None) -> Prepared | None:
    """Process i of a group, at the sample shape, the calls per loop its first process chose: its child started
    (or taken from the spares); None when the group has no case left to time."""
    config, run = m.config, m.run
    live = _live(m, group)
    if not live:
        return None
    sample_shape = run.results[live[0]].sample_shape
    assert sample_shape is not None  # the first process chose it (decide)
    key = "timing" if sample_shape == config.shape else "sample_timing"
    by_label = {c.label: c for c in config.cases}
    name = rundir.group_stem(group.cases)
    m.spares.ahead([by_label[l] for l in live], name, i)
    job = TimeJob(**job_base(config), cases=[job_case(by_label[l], config) for l in live],
                  plan=[PlanItem(sample_shape, {l: m.steps[l] for l in live}, key)])
    tell = progress or m.progress
    say = lambda _label, what: tell(f"timing {name}", (f"process {i}/{config.processes}"  # noqa: E731
                                    if i <= config.processes else f"process {i} (more, until the ratios settle)")
                                    + f": {what}")
    log = m.out / f"{name}-timing-{i}.log"
    # asked once: asked again after the fork, a server at its --forks-per-server would retire under its child
    forks = m.forks.get([by_label[l] for l in live])
    child = first_child(job, config, name, log, say, m.spares.take(log, live), forks)
    m.spares.open(m.out / f"{name}-timing-{i + 1}.log")  # the next one's CUDA context, while this one runs
    return Prepared(group, i, live, key, job, name, log, child, say, forks)


def _record(m: Measurement, ready: Prepared, result: tuple[Timed | None, str | None, Sampling | None]) -> None:
    """What process i of a group measured, added to its cases' loops (_at_once saves run.json)."""
    config, run = m.config, m.run
    group, i, live, key = ready.group, ready.i, ready.live, ready.key
    got, error, _ = result
    if got is None:
        # the process died or failed as a whole (its first process ran these cases): one process lost, not the
        # cases; the group goes on from the others (at most MOST_LOST lost)
        group.lost.append(f"{process_name(i, config.processes)}: {error}")
        return
    for label in live:
        r = run.results[label]
        failed = got.errors.get(label)
        if failed:  # what the earlier processes measured stays
            r.error = f"{process_name(i, config.processes)}: {failed}"
            continue
        r.warnings += [w for w in got.cases[label].warnings if w not in r.warnings]
        at, timed = r.at_sample_shape, got.cases[label].at(key)
        assert at is not None and timed is not None  # the first process timed it, and this one at `key`
        own_calls = None if timed.calls == at.calls else timed.calls  # balanced (_balance_requested)
        at.processes.append(replace(timed.loops, **got.process(), calls=own_calls))
    if any(label not in got.errors for label in live):
        group.processes += 1  # processes that finished their loops (a lost one is not among them)


def settled(m: Measurement, live: list[str], most: int) -> bool:
    """No more processes are needed. With --fail-above: every pair's verdict is decided (its 95% interval
    wholly above 1 + PCT/100, or wholly at or below it), however many processes that takes (the budget
    bounds it). Otherwise every pair of these cases has a ratio whose interval reaches no further than SETTLED
    (--settle) from it, or would still reach further with `most` processes that spread as these do (on a host where
    processes disagree by ±7%, seven more would not settle it, and would cost a minute). A pair of two
    environments is read by its anchored (speed-adjusted) ratio, against Config.env_settle; `most` is then up to
    Defaults.env_max_processes (60) a side and the budget bounds the run (on the H200 the unadjusted spread with
    at most 24 a side stopped null A/Bs at 5 processes: 24 would not settle them)."""
    fail_above = m.config.fail_above
    for _, _, figures, limit in pair_figures(m, live):
        if fail_above is not None:
            # one process a side decides nothing (diff.verdict says inconclusive): more processes
            if not decided(figures.ratio_interval, fail_above) or anchoring.processes_a_side(figures) < 2:
                return False
            continue
        reach, could = figures.reach, figures.reach_with(most)
        if reach is None or (reach > limit and (could is None or could <= limit)):
            return False
    return True


Figures = stats.PairFigures | anchoring.Anchored


def pair_figures(m: Measurement, live: list[str]) -> list[tuple[str, str, Figures, float]]:
    """Each pair of these cases with its figures so far and the reach its interval settles at: a pair of one
    process's cases by its paired ratio, against SETTLED; a pair of two environments by its anchored ratio, against
    Config.env_settle (none yet: left out); --settle replaces either."""
    timings = cast("dict[str, Timing]", {l: m.run.results[l].at_sample_shape for l in live})  # live: timed
    got: list[tuple[str, str, Figures, float]] = []
    for base, head in m.run.pairs:
        if base not in timings or head not in timings:
            continue
        figures: Figures | None
        if m.run.paired(base, head):
            figures, limit = stats.pair(base, timings[base], head, timings[head], True), SETTLED
        else:
            figures, limit = anchoring.anchored_pair(m.run, base, head), m.config.env_settle
        if figures is not None:
            got.append((base, head, figures, m.config.settle or limit))
    return got


def _stopped(m: Measurement, live: list[str], reason: str) -> None:
    """run.timing_stop: the first pair whose interval still reaches further than it settles at, and why no process
    was added (`reason`; "spread" where settled() found none unsettled means none is); nothing with --fail-above
    (its verdict says whether it was decided). run.json saved."""
    if m.config.fail_above is not None:
        return
    for base, head, figures, limit in pair_figures(m, live):
        if figures.reach is not None and figures.reach > limit:
            assert m.config.max_processes is not None  # Config.__post_init__ sets it
            m.run.timing_stop = TimingStop(reason, base, head, limit, m.config.max_processes)
            m.save()
            return


def decided(interval: stats.Interval | None, pct: float) -> bool:
    """A --fail-above PCT verdict is decided on this interval: wholly above 1 + PCT/100 (slower) or wholly at or
    below it (passed), as diff.verdict reads it."""
    limit = 1 + pct / 100
    return interval is not None and (interval.low > limit or interval.high <= limit)


def firsts_at_once(config: Config) -> int:
    """How many of the environments' first processes run side by side (compare --env): --processes-at-once
    where the later environments' firsts are spares (spare_firsts) and the requested shape is the one every
    process after them times side by side anyway: the op's host-bound shape, or the --sample-shape given (a
    first process times the requested shape, and at a GPU-bound one two of them would share the GPU their
    loops read). Else 1: one after another."""
    if len(config.environments) < 2 or config.at_once < 2 or not spare_firsts(config):
        return 1
    sampled_as_is = (config.sample_shape == config.shape or
                     (config.op in ops.OPS and ops.host_bound_shape(config.op, config.device) == config.shape))
    return config.at_once if sampled_as_is else 1


def time_envs(m: Measurement) -> None:
    """`compare --env`: each environment's cases (its anchor among them) in processes of their own, each
    process's loops interleaved as time_group does, the environments taking turns (more_processes). After
    --processes each, more while a pair's anchored ratio has not settled. The environments' first processes
    run firsts_at_once at a time."""
    config, run = m.config, m.run
    m.timing_started = time.monotonic()  # --budget counts from here
    groups: list[Group] = []
    envs = m.case_groups()
    at_once = firsts_at_once(config)
    for k in range(0, len(envs), at_once):
        batch = envs[k:k + at_once]
        say = sidebyside.locked(m.progress) if len(batch) > 1 else m.progress
        firsts = [_first(m, cases, f"paired: the cases of environment {cases[0].env} in the same processes, loops "
                                   "interleaved", say) for cases in batch]
        for first, (got, error) in zip(firsts, _run_firsts(m, firsts)):
            retry = _record_first(m, first, got, error, more=False)
            for case, why in retry:  # the anchored comparison needs every case beside the anchor: no timing alone
                run.results[case.label].error = (f"environment {first.cases[0].env}: "
                                                  f"{why.removesuffix('; timed alone')}")
            if any(g is first.group for g in run.groups):
                groups.append(first.group)
    m.save()
    more_processes(m, groups)
    stop_if_failed(run, config)


def _run_firsts(m: Measurement, firsts: list[First]) -> list[tuple[Timed | None, str | None]]:
    """The first processes of `firsts`, more than one side by side (sidebyside.run_all: each started here, its
    messages read on a thread of its own, every one stopped on Ctrl-C)."""
    if len(firsts) == 1:
        return [_run_first(m, firsts[0])]
    for first in firsts:
        try:
            _start_first(m, first)
        except BaseException:
            for started in firsts:
                started.end()
            raise
    return sidebyside.run_all(firsts, [functools.partial(_run_first, m, f) for f in firsts])
