"""The child's entry point, main(argv), run by spawn.child_command (and by `python -m flametool.measure.child`):
the CPUs pinned, the job read (from the command line; a spare's from stdin, after its preloading), run, and its
result or the one line of its failure sent; then the process ends without the interpreter's teardown. A fork
server (FORKSERVER, child/forkserver.py) imports once and forks a child per job, which runs `forked`: from the
job on, the same code as a fresh child's (begin, then run)."""

from __future__ import annotations

import os
import sys
import traceback
from typing import Any, Callable, cast

from ... import procs
from .. import explain
from ..protocol import (CPUS_ENV, FORKSERVER, OPEN, SPARE, CaseProfiled, Done, Failed, JobCase, ProfileJob, SweepJob, Swept, Timed, TimeJob,
    decode_job)
from .building import CASE_FAULTS, CaseUnavailable, FactoryFailed, describe
from . import forkserver
from .preload import open_device, preload, preload_behind, start_operands
from . import loops
from .reporter import Reporter
from .work import profile_case, sweep_cases, time_cases


# each takes the job of its key
JOBS: dict[type, Callable[[Any, Reporter], Timed | Swept | CaseProfiled]] = {
    TimeJob: time_cases, SweepJob: sweep_cases, ProfileJob: profile_case}



def read_job(on_open: Callable[[], None] | None = None) -> TimeJob | SweepJob | ProfileJob | None:
    """A spare's job: the first line on stdin other than OPEN (each OPEN before it calls `on_open`: the parent asks
    the spare to make its CUDA context now); None when the parent closed it (the spare was not needed). What came
    after the job in the same read (a GO) is kept for the loops that read stdin next (loops.wait_go, then the
    sampled loop's stop)."""
    data = b""
    while True:
        while b"\n" not in data:
            chunk = os.read(loops.CONTROL, 1 << 16)
            if not chunk:
                return None
            data += chunk
        line, _, data = data.partition(b"\n")
        if line == OPEN.strip():
            if on_open is not None:
                on_open()
            continue
        loops.keep_read(data)
        return decode_job(line)



def pin_cpus() -> None:
    """Run on the CPUs the parent chose (CPUS_ENV), before any library sizes its thread pools."""
    given = os.environ.get(CPUS_ENV)
    if given:
        try:
            os.sched_setaffinity(0, {int(c) for c in given.split(",")})
        except (OSError, ValueError):  # not allowed here: the run goes on with every CPU, as without it
            pass



def main(argv: list[str]) -> int:
    if argv[1] == FORKSERVER:  # SOCKET_FD FORKSERVER PARENT_PID MODULES: it forks the children, each runs `forked`
        return forkserver.serve(int(argv[0]), int(argv[2]), [m for m in argv[3].split(",") if m], forked)
    loops.own_control()
    pin_cpus()
    report = Reporter(int(argv[0]))
    if argv[1] == SPARE:
        procs.tie_to_parent(int(argv[2]))
        modules = [m for m in argv[3].split(",") if m]
        preload(modules)
        device = argv[4] if len(argv) > 4 else "cpu"
        job = read_job(lambda: open_device(modules, device))
        if job is None:
            return 0
        start_operands(job)
    else:
        job = decode_job(argv[1])
        procs.tie_to_parent(job.parent_pid)
        begin(job, report, apart=True)
    return run(job, report)


def forked(msg_fd: int, job_line: str, server_pid: int) -> int:
    """A child forked by the fork server (its process group, standard streams, CPU list and MARKER set there):
    from its job on, what a fresh child does."""
    loops.own_control()
    pin_cpus()
    report = Reporter(msg_fd)
    job = decode_job(job_line)
    procs.tie_to_parent(job.parent_pid, via=server_pid)  # a fork keeps no parent-death signal: set it again
    begin(job, report)  # the server imported the libraries: this finds them imported
    return run(job, report, started="forked", forked_from=server_pid)


def begin(job: TimeJob | SweepJob | ProfileJob, report: Reporter, apart: bool = False) -> None:
    """A child given its job at start: the operands started, and its libraries imported beside them (`apart`: a
    fresh process, nothing imported yet; many values are made in a process of their own: values.Apart)."""
    libraries = start_operands(job, apart)
    if libraries:  # seconds (import torch: 6 s on the H200 host) before the first other line
        report.phase("import", label=", ".join(libraries))
    preload_behind(libraries)  # the imports while the operands are made


def run(job: TimeJob | SweepJob | ProfileJob, report: Reporter, started: str = "fresh",
        forked_from: int | None = None) -> int:
    """The job run, its result or the one line of its failure sent; then the process ends (procs.exit_now)."""
    try:
        result = JOBS[type(job)](job, report)
    except CaseUnavailable as exc:
        report.send(Failed(str(exc)))
        return 1
    except FactoryFailed as exc:
        assert isinstance(job, ProfileJob) and job.case is not None  # the other jobs catch it case by case
        report.send(Failed(f"factory {job.case.case.factory} failed: {exc}"))
        return 1
    except CASE_FAULTS as exc:  # noqa: BLE001 -- anything a case does wrong becomes one line for the parent
        try:
            traceback.print_exc()
        except OSError:  # the log cannot be written (a full disk): the one line below still goes
            pass
        known = (explain.known_fault(exc, job.shape, cast(JobCase, job.case).dtype, job.device)  # a ProfileJob has its case
                 if isinstance(job, ProfileJob) else None)
        report.send(Failed(known or describe(exc)))
        return 1
    if isinstance(result, Timed):
        result.started, result.forked_from = started, forked_from
    report.send(Done(result))
    procs.exit_now(0)
    return 0
