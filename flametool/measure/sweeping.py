"""sweep's timed loops: every case at every size in each process, paired as compare pairs them, each size
kept as soon as a process reports it; and the progress line that says which size and how much is left."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from .spawn import run_child
from .jobs import job_base, job_case, others
from .measurement import Measurement
from ..run import rundir
from ..workload.cases import CaseSpec
from .protocol import Point, SweepItem, SweepJob
from ..run.record import Group, SweepPoint, size_name


@dataclass
class SweepLeft:
    """How much of a sweep's timing is left, for its progress line: each size in each process is one step.
    The time left is the time so far scaled by the steps left, each weighed by what that size took in the
    first process (a sweep's largest size can take most of a process); in the first process, by the
    steps alone."""

    sizes: list[list[int]]
    processes: int
    op: str  # the run's (Config.op), which names the sizes (record.size_name)
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
        weight_done: float
        weight_all: float
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
        size = size_name(self.sizes[j], self.op)
        where = (f"size {j + 1}/{len(self.sizes)} ({size}) in process {process}/{self.processes}"
                 if self.done < len(self.sizes) * self.processes else f"process {process}/{self.processes}")
        left = self.left_seconds()
        eta = "" if left is None else f", about {left:.0f} s left" if left < 120 else f", about {left / 60:.0f} min left"
        sizes = f"{len(self.sizes)} size{'s' if len(self.sizes) != 1 else ''}"
        # one process: "5 sizes in 1 process", not "in each of 1 processes"
        within = f"in each of {self.processes} processes" if self.processes != 1 else "in 1 process"
        return f"{self.done}/{len(self.sizes) * self.processes} timed ({sizes} {within}){eta}; {where}"


def time_sweep(m: Measurement, cases: list[CaseSpec], reason: str) -> list[tuple[CaseSpec, str]]:
    """A sweep's timed loops of `cases`: every size in each of config.processes processes, the cases built
    side by side at each size and their loops interleaved. Each size is kept (run.json saved) as soon as
    a process reports it. Returns the cases to time again alone, as time_group does, when their shared
    first process failed before it measured anything."""
    config, run = m.config, m.run
    assert config.sizes is not None  # a sweep's config has its sizes
    paired = len(cases) > 1
    group = Group([c.label for c in cases], paired, reason)
    run.groups.append(group)
    for c in cases:
        r = run.results[c.label]
        r.group = len(run.groups) - 1
        r.points = [SweepPoint(shape=list(size), calls=0, processes=[]) for size in config.sizes]
    name = rundir.group_stem(group.cases)
    # per size, the calls per loop of each case there, as the first process chose them; a case that fails
    # at a size leaves it, so that its processes at every size stay the first ones (pairing reads them by
    # position)
    calls: list[dict[str, int]] = [{} for _ in config.sizes]
    left = SweepLeft(config.sizes, config.processes, config.op)
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
                assert entry.loops is not None  # an entry without an error has its loops
                t.processes.append(entry.loops)
            # a process whose sizes are kept is one that ran, if it is stopped or fails before its last size (an
            # interrupted sweep's page said "processes run 0" beside figures from the one it kept)
            group.processes = max(group.processes, i)
            left.step()
            m.save()

        job = SweepJob(**job_base(config), cases=[job_case(c, config) for c in live],
                       points=[SweepItem(size, None if i == 1 else calls[j]) for j, size in enumerate(config.sizes)])
        say = lambda what, i=i: m.progress(f"sweep {name}", f"{left.line(i)}: {what}")  # noqa: E731
        got, error, _ = run_child(job, config, name, m.out / f"{name}-sweep-{i}.log", lambda _l, t: say(t),
                                  on_point=keep)
        measured = any(p.processes for c in cases for p in run.results[c.label].points)
        if got is None and i == 1 and paired and not measured:
            run.groups.pop()  # nothing was measured together: each case gets a group of its own
            for c in cases:
                run.results[c.label].group, run.results[c.label].points = None, []
            return [(c, f"the process shared with {others(c, cases)} failed ({error}); timed alone") for c in cases]
        if got is None:  # what the processes before it (and it, up to its failure) measured stays
            for c in live:
                run.results[c.label].error = error if i == 1 else f"process {i} of {config.processes}: {error}"
            break
        group.processes = i
        m.save()
    group.paired = paired and len(group.cases) > 1
    return []
