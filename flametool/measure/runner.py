"""The parent: the timed loops of every case in shared processes (paired), then each case alone under
cProfile and py-spy; the run directory written after every process so that nothing measured is lost when
a later one (or the user) stops the run.

Why shared processes: a fresh process on a shared host runs the same loop at a speed of its own and keeps
it, which multiplies every case in that process alike. So by default all cases of a run are built in each
of ``--processes`` processes and their loops interleaved there (see child.time_cases); the comparison is
made within each process and pooled (stats.py). A case that cannot share a process (it fails to be built
beside the others, or the shared process dies) is timed in processes of its own, and run.json says why.
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Callable

from . import envinfo, sampler
from .childproc import Progress, Spares, child_sample_grace, run_child, step_timeout
from .. import procs, rundir
from ..analyse import stats
from ..cases import BUILTIN, CaseSpec
from ..config import Config, default_out  # noqa: F401 - default_out: runner.default_out
from ..errors import CaseError, FlametoolError
from ..protocol import JobCase, PlanItem, Point, ProfileJob, SweepItem, SweepJob, TimedLoops, TimeJob
from ..record import CaseResult, Group, ProfileProcess, Run, RunConfig, SweepPoint, Timing, host_bound, size_name


# A pair's ratio has settled when its 95% interval reaches no further than this from it.
SETTLED = 0.02


def job_base(config: Config) -> dict:
    """What every job takes from the run's config (Job's fields)."""
    return dict(device=config.device, iters=config.iters, warmup=config.warmup, repeats=config.repeats,
                extend_rounds=config.extend_rounds, parent_pid=os.getpid())


def job_case(case: CaseSpec, config: Config) -> JobCase:
    return JobCase(case.label, case, config.dtypes[case.label])


def blank_result(case: CaseSpec, config: Config) -> CaseResult:
    return CaseResult(
        label=case.label, factory=f"{case.module or case.file}:{case.factory}",
        library=BUILTIN[case.name].library if case.module and case.name in BUILTIN else None,
        device=config.device, dtype=config.dtypes[case.label], shape=list(config.shape), warmup=config.warmup,
        env=case.env,
    )


def _timing(timed: TimedLoops) -> Timing:
    return Timing(shape=timed.shape, calls=timed.calls, processes=[timed.loops], host_bound=timed.host_bound,
                  bound_note=timed.bound_note)


@dataclass
class SweepLeft:
    """How much of a sweep's timing is left, for its progress line: each size in each process is one step.
    The time left is the time so far scaled by the steps left, each weighed by what that size took in the
    first process (a sweep's largest size can take most of a process); in the first process, by the
    steps alone."""

    sizes: list[list[int]]
    processes: int
    started: float = field(default_factory=lambda: time.monotonic())
    done: int = 0
    seconds: list[float] = field(default_factory=list)  # each size's seconds in the first process
    mark: float = field(default_factory=lambda: time.monotonic())

    def step(self) -> None:
        now = time.monotonic()
        if self.done < len(self.sizes):
            self.seconds.append(now - self.mark)
        self.done, self.mark = self.done + 1, now

    def left_seconds(self) -> float | None:
        if not self.done:
            return None
        total = len(self.sizes) * self.processes
        if len(self.seconds) < len(self.sizes):
            weight_done, weight_all = self.done, total
        else:
            full, part = divmod(self.done, len(self.sizes))
            weight_done = full * sum(self.seconds) + sum(self.seconds[:part])
            weight_all = self.processes * sum(self.seconds)
        elapsed = time.monotonic() - self.started
        return elapsed * (weight_all - weight_done) / weight_done if weight_done > 0 else None

    def line(self, process: int) -> str:
        j = self.done % len(self.sizes)
        where = (f"size {j + 1}/{len(self.sizes)} ({size_name(self.sizes[j])}) in process {process}/{self.processes}"
                 if self.done < len(self.sizes) * self.processes else f"process {process}/{self.processes}")
        left = self.left_seconds()
        eta = "" if left is None else f", about {left:.0f} s left" if left < 120 else f", about {left / 60:.0f} min left"
        return f"{self.done}/{len(self.sizes) * self.processes} sizes timed{eta}; {where}"


class Measurement:
    """The run being measured: its record, saved after every process."""

    def __init__(self, config: Config, run: Run, progress: Progress) -> None:
        self.config, self.run, self.progress = config, run, progress
        self.out = config.out
        self.steps: dict[str, int] = {}  # calls of step() per loop at the sample shape, per case
        self.spares = Spares(config, self.out)

    def save(self) -> None:
        rundir.save(self.out, self.run)

    def case_groups(self) -> list[list[CaseSpec]]:
        """The cases that share processes: all of them, or with --env those of each environment."""
        envs = [e.name for e in self.config.environments]
        if not envs:
            return [self.config.cases]
        return [[c for c in self.config.cases if c.env == e] for e in envs]

    def time_group(self, cases: list[CaseSpec], reason: str, more: bool = True) -> list[tuple[CaseSpec, str]]:
        """The timed loops of `cases` in config.processes processes (more=False: the first only; time_envs runs
        the others). Returns the cases to time again alone (they could not be built beside the others, or the
        shared process failed), with why."""
        config, run = self.config, self.run
        paired = len(cases) > 1
        group = Group([c.label for c in cases], paired, reason)
        run.groups.append(group)
        index = len(run.groups) - 1
        name = "+".join(group.cases)
        for c in cases:
            run.results[c.label].group = index
        first = TimeJob(**job_base(config), cases=[job_case(c, config) for c in cases], sample_shape=config.sample_shape,
                        plan=[PlanItem(config.shape, None, "timing", decide=True)], op=config.op)
        say = lambda what: self.progress(f"timing {name}", f"process 1/{config.processes}: {what}")  # noqa: E731
        got, error, _ = run_child(first, config, name, self.out / f"{name}-timing.log", lambda _l, t: say(t))
        if got is None:
            if paired:
                run.groups.pop()  # nothing was measured together: each case gets a group of its own
                for c in cases:
                    run.results[c.label].group = None
                return [(c, f"the process shared with {self._others(c, cases)} failed ({error}); timed alone") for c in cases]
            run.results[cases[0].label].error = error
            return []
        retry: list[tuple[CaseSpec, str]] = []
        for c in cases:
            r = run.results[c.label]
            mine = got.cases[c.label]
            failed = got.errors.get(c.label)
            if failed and paired:
                retry.append((c, f"could not be built or run beside {self._others(c, cases)} ({failed}); timed alone"))
                group.cases.remove(c.label)
                r.group = None
                continue
            if failed:
                r.error = failed
                continue
            r.ops_per_step = 1 if mine.ops_per_step is None else mine.ops_per_step
            r.device_info = mine.device_info
            r.operands = list(mine.operands)
            r.timing = _timing(mine.timing)
            r.sample_shape, r.sample_shape_reason = got.sample_shape, got.sample_shape_reason
            if mine.sample_timing is not None:
                r.sample_timing = _timing(mine.sample_timing)
            self.steps[c.label] = (mine.sample_timing or mine.timing).steps
        if not group.cases:  # every case is to be timed alone: nothing was measured together
            run.groups.pop()
            return retry
        group.paired = len(group.cases) > 1
        if paired and not group.paired:
            group.reason = "alone: the other cases of the run could not share its processes"
        group.processes = 1
        self.save()
        if more:
            self._more_processes([group])
        return retry

    def _others(self, case: CaseSpec, cases: list[CaseSpec]) -> str:
        return ", ".join(c.label for c in cases if c is not case)

    def _more_processes(self, groups: list[Group]) -> None:
        """Processes 2..N of each group: the loops at the sample shape only (the requested shape, when it is
        not host-bound, holds the GPU for seconds a loop and is timed in the first process alone). Several
        groups (the environments of `compare --env`) take turns, A B, B A, A B, ...: neither is always first,
        so a drift of the host over the run falls on both alike."""
        try:
            self._processes_after_the_first(groups)
        finally:
            for group in groups:  # the ratios settled before these were needed
                self.spares.stop(f"{'+'.join(group.cases)}-timing-")

    def _processes_after_the_first(self, groups: list[Group]) -> None:
        config = self.config
        started = time.monotonic()
        i = 1
        while i < config.max_processes:
            live = [l for g in groups for l in self._live(g)]
            if not live:
                return
            if i >= config.processes and (self._settled(live, config.max_processes)
                                          or time.monotonic() - started > config.extra_seconds):
                return
            i += 1
            for group in (groups if i % 2 else groups[::-1]):
                self._one_more(group, i)

    def _live(self, group: Group) -> list[str]:
        return [l for l in group.cases if self.run.results[l].error is None and l in self.steps]

    def _one_more(self, group: Group, i: int) -> None:
        """Process i of a group, at the sample shape, the calls per loop its first process chose."""
        config, run = self.config, self.run
        live = self._live(group)
        if not live:
            return
        sample_shape = run.results[live[0]].sample_shape
        key = "timing" if sample_shape == config.shape else "sample_timing"
        by_label = {c.label: c for c in config.cases}
        name = "+".join(group.cases)
        self.spares.ahead([by_label[l] for l in live], name, i)
        job = TimeJob(**job_base(config), cases=[job_case(by_label[l], config) for l in live],
                      plan=[PlanItem(sample_shape, {l: self.steps[l] for l in live}, key)])
        say = lambda what: self.progress(f"timing {name}", f"process {i}/{config.processes}"  # noqa: E731
                                         + ("" if i <= config.processes else " (more, until the ratios settle)")
                                         + f": {what}")
        log = self.out / f"{name}-timing-{i}.log"
        got, error, _ = run_child(job, config, name, log, lambda _l, t: say(t), spare=self.spares.take(log, live))
        for label in live:
            r = run.results[label]
            failed = error if got is None else got.errors.get(label)
            if failed:  # what the earlier processes measured stays
                r.error = f"process {i} of {config.processes}: {failed}"
                continue
            r.at_sample_shape.processes.append(got.cases[label].at(key).loops)
        if got is not None and any(label not in got.errors for label in live):
            group.processes = i  # processes that finished their loops
        self.save()

    def _settled(self, live: list[str], most: int) -> bool:
        """No more processes can help: every pair of these cases has a ratio whose interval reaches no further
        than SETTLED from it, or would still reach further with `most` processes that spread as these do (on
        a host where processes disagree by ±7%, seven more would not settle it, and would cost a minute). A
        pair of two environments is read by its anchored ratio."""
        timings = {l: self.run.results[l].at_sample_shape for l in live}
        for base, head in self.run.pairs:
            if base in timings and head in timings:
                if self.run.paired(base, head):
                    figures = stats.pair(base, timings[base], head, timings[head], True)
                else:
                    figures = stats.anchored_pair(self.run, base, head)
                    if figures is None:
                        continue
                reach, could = figures.reach, figures.reach_with(most)
                if reach is None or (reach > SETTLED and (could is None or could <= SETTLED)):
                    return False
        return True

    def time_envs(self) -> None:
        """`compare --env`: each environment's cases (its anchor among them) in processes of their own, each
        process's loops interleaved as time_group does, the environments taking turns (_more_processes). After
        --processes each, more while a pair's anchored ratio has not settled."""
        config, run = self.config, self.run
        groups: list[Group] = []
        for cases in self.case_groups():
            env, before = cases[0].env, len(run.groups)
            retry = self.time_group(cases, f"paired: the cases of environment {env} in the same processes, loops "
                                           "interleaved", more=False)
            for case, why in retry:  # the anchored comparison needs every case beside the anchor: no timing alone
                run.results[case.label].error = f"environment {env}: {why.removesuffix('; timed alone')}"
            if len(run.groups) > before:
                groups.append(run.groups[before])
        self.save()
        self._more_processes(groups)
        stop_if_failed(run, config)

    def time_sweep(self, cases: list[CaseSpec], reason: str) -> list[tuple[CaseSpec, str]]:
        """A sweep's timed loops of `cases`: every size in each of config.processes processes, the cases built
        side by side at each size and their loops interleaved. Each size is kept (run.json saved) as soon as
        a process reports it. Returns the cases to time again alone, as time_group does, when their shared
        first process failed before it measured anything."""
        config, run = self.config, self.run
        paired = len(cases) > 1
        group = Group([c.label for c in cases], paired, reason)
        run.groups.append(group)
        for c in cases:
            r = run.results[c.label]
            r.group = len(run.groups) - 1
            r.points = [SweepPoint(shape=list(size), calls=0, processes=[]) for size in config.sizes]
        name = "+".join(group.cases)
        # per size, the calls per loop of each case there, as the first process chose them; a case that fails
        # at a size leaves it, so that its processes at every size stay the first ones (pairing reads them by
        # position)
        calls: list[dict[str, int]] = [{} for _ in config.sizes]
        left = SweepLeft(config.sizes, config.processes)
        for i in range(1, config.processes + 1):
            live = [c for c in cases if run.results[c.label].error is None]
            if not live:
                break

            def keep(msg: Point, i: int = i) -> None:
                j = msg.index
                for label, entry in msg.cases.items():
                    r = run.results[label]
                    t = r.points[j]
                    r.ops_per_step = msg.ops_per_step.get(label, r.ops_per_step)
                    r.device_info = msg.device_info
                    if entry.error is not None:
                        t.error = entry.error if i == 1 else f"process {i} of {config.processes}: {entry.error}"
                        calls[j].pop(label, None)
                        continue
                    if i == 1:
                        t.calls, calls[j][label] = entry.calls, entry.steps
                        if entry.operands is not None:
                            r.operands.append(entry.operands)
                    t.processes.append(entry.loops)
                left.step()
                self.save()

            job = SweepJob(**job_base(config), cases=[job_case(c, config) for c in live],
                           points=[SweepItem(size, None if i == 1 else calls[j]) for j, size in enumerate(config.sizes)])
            say = lambda what, i=i: self.progress(f"sweep {name}", f"{left.line(i)}: {what}")  # noqa: E731
            got, error, _ = run_child(job, config, name, self.out / f"{name}-sweep-{i}.log", lambda _l, t: say(t),
                                      on_point=keep)
            measured = any(p.processes for c in cases for p in run.results[c.label].points)
            if got is None and i == 1 and paired and not measured:
                run.groups.pop()  # nothing was measured together: each case gets a group of its own
                for c in cases:
                    run.results[c.label].group, run.results[c.label].points = None, []
                return [(c, f"the process shared with {self._others(c, cases)} failed ({error}); timed alone") for c in cases]
            if got is None:  # what the processes before it (and it, up to its failure) measured stays
                for c in live:
                    run.results[c.label].error = error if i == 1 else f"process {i} of {config.processes}: {error}"
                break
            group.processes = i
            self.save()
        group.paired = paired and len(group.cases) > 1
        return []

    def profile(self, case: CaseSpec) -> None:
        """The case alone at the sample shape: its own loops, cProfile, and py-spy."""
        r = self.run.results[case.label]
        got = self.profiled(case, r.sample_shape, self.steps[case.label], case.label)
        if isinstance(got, str):
            r.error = f"profiling alone at {','.join(map(str, r.sample_shape))}: {got}"
        else:
            r.profile = got

    def profile_points(self, case: CaseSpec) -> None:
        """A sweep's --sample: the case alone at each size where its timed loops were host-bound, into
        LABEL@SIZE.prof and LABEL@SIZE.folded; run.json saved after each."""
        r = self.run.results[case.label]
        for t in r.points:
            if t.error or not host_bound(t):
                continue
            got = self.profiled(case, t.shape, max(1, t.calls // r.ops_per_step), f"{case.label}@{size_name(t.shape)}")
            if isinstance(got, str):
                t.error = f"profiling alone: {got}"
            else:
                t.profile = got
            self.save()
            if not isinstance(got, str):
                stop_if_refused(case.label, got, self.out)

    def profiled(self, case: CaseSpec, shape: list[int], steps: int, name: str) -> ProfileProcess | str:
        """The case alone at `shape`, `steps` calls a loop: its own loops, cProfile and py-spy, into NAME.prof
        and NAME.folded. Returns what it measured, or why it could not."""
        config = self.config
        job = ProfileJob(**job_base(config), case=job_case(case, config), shape=shape, steps=steps, sample=config.sample,
                         prof_path=str(rundir.prof_path(self.out, name).resolve()),
                         max_sample_seconds=config.sample_seconds + child_sample_grace())
        log = self.out / f"{name}.log"
        got, error, sampling = run_child(job, config, name, log, self.progress, rundir.folded_path(self.out, name),
                                         spare=self.spares.take(log, [case.label]))
        if got is None:
            return error
        files = {"prof": rundir.prof_path(self.out, name).name}
        if sampling is not None:
            files["folded"] = rundir.folded_path(self.out, name).name
            sampling.calls_per_chunk = got.calls_per_chunk
            sampling.chunks = len(got.chunks or [])
            sampling.sampled_us_per_call = sampler.sampled_us_per_call(got.chunks or [], got.calls_per_chunk or 1,
                                                                       sampling.window)
        return ProfileProcess(own=got.own, calls=got.calls, cprofile_us_per_call=got.cprofile_us_per_call,
                        cprofile_calls=got.cprofile_calls, sampling=sampling, files=files)


def start(config: Config, argv: list[str], progress: Progress, kind: str = "compare") -> Measurement:
    """Check what can be checked before anything runs, claim the run directory and write its first run.json."""
    out = config.out
    if not config.out_is_default:
        rundir.ensure_new(out)
    if config.sample:  # before anything starts: a run that cannot sample says so now, not after the timings
        sampler.check_available()
    sampler.attach_seconds()  # a bad FLAMETOOL_PYSPY_TIMEOUT, too
    step_timeout()  # and FLAMETOOL_STEP_TIMEOUT
    config.out = rundir.create(out, unique=config.out_is_default)
    run = Run(schema=rundir.SCHEMA, kind=kind, complete=False, started=_now(), finished=None, command=argv,
              config=RunConfig.of(config.to_json()), env=envinfo.collect(config.device),
              results={c.label: blank_result(c, config) for c in config.cases},
              environments=list(config.environments))
    m = Measurement(config, run, progress)
    m.save()
    return m


@contextlib.contextmanager
def finishing(m: Measurement):
    """run.json saved at the end whatever happens, marked complete only when the body finished."""
    try:
        yield
        m.run.complete = True
    finally:
        with procs.signals_deferred():  # a second Ctrl-C must not lose run.json
            m.spares.stop()
            m.run.finished = _now()
            m.save()


def time_all(m: Measurement, time_group: Callable[[list[CaseSpec], str], list[tuple[CaseSpec, str]]]) -> None:
    """Every case's timed loops, by `time_group` (compare's or the sweep's): all in shared processes, then
    alone each case that could not share them; or each alone with --isolate."""
    config = m.config
    if config.isolate:
        todo = [(c, "--isolate: each case in processes of its own") for c in config.cases]
    else:
        todo = time_group(config.cases, "paired: every case of the run in the same processes, loops interleaved"
                          if len(config.cases) > 1 else "one case: timed alone")
    for case, why in todo:
        time_group([case], why)
    stop_if_failed(m.run, config)


def compare(config: Config, argv: list[str], progress: Progress) -> tuple[Path, Run]:
    """Measure every case; run.json is saved after every process and marked complete at the end."""
    m = start(config, argv, progress)
    run, out = m.run, config.out
    with finishing(m):
        m.spares.start_for_compare(m.case_groups())
        if config.environments:
            m.time_envs()
        else:
            time_all(m, m.time_group)
        for case in config.cases:
            r = run.results[case.label]
            if r.error is not None or case.label not in m.steps:
                continue
            m.profile(case)
            m.save()
            if r.profile is not None:
                stop_if_refused(case.label, r.profile, out)
            stop_if_failed(run, config)
    return out, run


def sweep(config: Config, argv: list[str], progress: Progress) -> tuple[Path, Run]:
    """Time every case at every size of config.sizes, paired as compare pairs them; run.json is saved after
    every process and marked complete at the end."""
    m = start(config, argv, progress, kind="sweep")
    with finishing(m):
        time_all(m, m.time_sweep)
        if config.sample:
            for case in config.cases:
                if m.run.results[case.label].error is None:
                    m.profile_points(case)
    return config.out, m.run


def stop_if_refused(label: str, profile: ProfileProcess, out: Path) -> None:
    """The kernel refused py-spy's attach: it will refuse every case alike, so stop here, with what to change
    (what was measured is saved before this is asked)."""
    if profile.sampling is not None and profile.sampling.refused:
        raise FlametoolError(f"case {label!r}: {profile.sampling.error} (its timings and cProfile are kept in {out})")


def stop_if_failed(run: Run, config: Config) -> None:
    failed = [l for l, r in run.results.items() if r.error]
    if failed and not config.keep_going:
        label = failed[0]
        raise CaseError(f"case {label!r}: {run.results[label].error} (finished cases kept in {config.out})")


def _now() -> str:
    return datetime.now().astimezone().isoformat(timespec="seconds")
