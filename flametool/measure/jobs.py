"""What the parent's phases share: the fields every job takes from the run's config, one case as a job names
it, the record a case starts from, and a timing read from a child's loops."""

from __future__ import annotations

import os
from dataclasses import replace

from ..workload.builtins import BUILTIN
from ..workload.workloads import LIBRARY
from ..workload.cases import CaseSpec
from .config import Config
from .protocol import JobCase, TimedLoops
from ..run.record import CaseResult
from ..run.timing import Timing


def job_base(config: Config) -> dict:
    """What every job takes from the run's config (Job's fields)."""
    return dict(device=config.device, iters=config.iters, warmup=config.warmup, repeats=config.repeats,
                extend_rounds=config.extend_rounds, parent_pid=os.getpid(), timed_seconds=config.timed_seconds)


def job_case(case: CaseSpec, config: Config) -> JobCase:
    return JobCase(case.label, case, config.dtypes[case.label])


def blank_result(case: CaseSpec, config: Config) -> CaseResult:
    return CaseResult(
        label=case.label, factory=f"{case.module or case.file}:{case.factory}",
        library=(LIBRARY[case.xp] if case.xp else
                 BUILTIN[case.name].library if case.module and case.name in BUILTIN else None),
        device=config.device, dtype=config.dtypes[case.label], shape=list(config.shape), warmup=config.warmup,
        env=case.env,
    )


def as_timing(timed: TimedLoops, process: dict | None = None) -> Timing:
    """A case's timing from its first process's loops (`process`: how that process started, Timed.process())."""
    loops = timed.loops if process is None else replace(timed.loops, **process)
    return Timing(shape=timed.shape, calls=timed.calls, processes=[loops], host_bound=timed.host_bound,
                  bound_note=timed.bound_note)


def others(case: CaseSpec, cases: list[CaseSpec]) -> str:
    return ", ".join(c.label for c in cases if c is not case)
