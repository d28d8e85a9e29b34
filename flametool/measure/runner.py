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
import functools
from datetime import datetime
from pathlib import Path
from typing import Callable

from . import machine, paired, profiling, sampler, sweeping
from .spawn import Progress, drop_if_empty, step_timeout
from .jobs import blank_result
from .measurement import Measurement, stop_if_failed
from .. import procs
from ..run import rundir
from ..workload.cases import CaseSpec
from .config import Config, default_out  # noqa: F401 - default_out: runner.default_out
from ..run.record import Run, RunConfig


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
              config=RunConfig.of(config.to_json()), env=machine.collect(config.device),
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
            m.forks.stop()
            m.run.finished = _now()
            m.save()
            # a log is for a case that printed or failed: those of children stopped before they printed anything
            # (a Ctrl-C; a process readied for a turn that did not come) go, as a finished child's empty log does
            for log in m.config.out.glob("*.log"):
                drop_if_empty(log)


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
        m.forks.start(m.case_groups())  # first: they import while the spares start
        m.spares.start_for_compare(m.case_groups(), paired.spare_firsts(config), paired.defer_spares(config))
        if config.environments:
            paired.time_envs(m)
        else:
            time_all(m, functools.partial(paired.time_group, m))
        try:
            profiling.profile_all(m, config.cases)  # each case in turn, the next readied during its sampling
            stop_if_failed(run, config)
        finally:  # the lines of the cases profiled so far, whatever stopped the run
            m.save_sources()
    return out, run


def sweep(config: Config, argv: list[str], progress: Progress) -> tuple[Path, Run]:
    """Time every case at every size of config.sizes, paired as compare pairs them; run.json is saved after
    every process and marked complete at the end."""
    m = start(config, argv, progress, kind="sweep")
    with finishing(m):
        time_all(m, functools.partial(sweeping.time_sweep, m))
        if config.sample:
            try:
                for case in config.cases:
                    if m.run.results[case.label].error is None:
                        profiling.profile_points(m, case)
            finally:
                m.save_sources()
    return config.out, m.run


def _now() -> str:
    return datetime.now().astimezone().isoformat(timespec="seconds")
