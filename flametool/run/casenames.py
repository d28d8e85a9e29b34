"""Which case of a run a command's option names (`export --case`, `diff --case/--base/--head`, `snakeviz --case`),
and a sweep's sizes read as cases.

`sweep --sample` profiles each case alone at each size where it was host-bound, into LABEL@SIZE.prof and
LABEL@SIZE.folded (SweepPoint.profile). The commands that read profiles read such a run as a compare run whose
cases are its cases at its sizes, named as those files are: numpy@64, cupy@4096x1024x4096 (as_cases). Each keeps
its timed loops at that size, and the cases at one size are grouped as they were timed there (in the same
processes, their loops interleaved): `diff RUN --base numpy@64 --head torch@64` is paired, and `diff SWEEP_A SWEEP_B
--case numpy@64` is anchored on another case timed beside it at that size in both. A size where a case was timed
but not profiled is a case too, for its timings (a diff, an anchor); export and snakeviz name profiled ones only."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import FlametoolError
from .record import CaseResult, Group, Run, RunConfig, size_name
from .timing import Timing, host_bound

SEPARATOR = "@"  # LABEL@SIZE
SIZE = re.compile(r"[0-9]{1,15}([x,][0-9]{1,15}){0,2}")  # N, RxC, MxKxN (or with commas): a shape run.json reads


@dataclass
class SweepCases(Run):
    """A sweep read as the cases of a compare run, each one of its cases at one of its sizes (as_cases); `sweep` is
    the run as recorded."""

    sweep: Run | None = None


def sized(label: str, shape: list[int], op: str) -> str:
    """A case at one size of a sweep of `op` (record.size_name), as its profile's files are named
    (profiling.profile_points) and the cases of as_cases are: numpy@64, cupy@4096x1024x4096, a workload's
    numpy@64x64x64."""
    return f"{label}{SEPARATOR}{size_name(shape, op)}"


def profiled_sizes(run: Run) -> bool:
    """Whether a sweep has any case profiled at any size (`sweep --sample`)."""
    return any(t.profile is not None for r in run.results.values() for t in r.points)


def as_cases(run: Run) -> SweepCases:
    """The sweep `run` as a compare run whose cases are its cases at each size they were timed or profiled at
    (LABEL@SIZE, in the order of the sizes, then of the cases), each with its timed loops and its profiled process
    (None: not profiled there) at that size."""
    results: dict[str, CaseResult] = {}
    groups: list[Group] = []
    where: dict[tuple[int, str], int] = {}  # (the sweep's group, a size) -> its group in the view
    specs = [c for c in run.config.recorded.get("cases") or [] if isinstance(c, dict)]
    cases: list[dict] = []
    pairs: list[list[str]] = []
    op = run.config.operation
    for shape in sizes_of(run):
        for label, r in run.results.items():
            t = next((p for p in r.points if p.shape == shape), None)
            if t is None or (t.profile is None and not t.processes):  # neither timed nor profiled there
                continue
            name = sized(label, shape, op)
            group = None
            if r.group is not None and 0 <= r.group < len(run.groups):
                key = (r.group, size_name(shape, op))
                if key not in where:
                    g = run.groups[r.group]
                    where[key] = len(groups)
                    groups.append(Group([], g.paired, g.reason, g.processes, list(g.lost)))
                group = where[key]
                groups[group].cases.append(name)
            timing = Timing(list(t.shape), t.calls, t.processes, t.host_bound, t.bound_note)
            results[name] = dataclasses.replace(
                r, label=name, shape=list(t.shape), group=group, timing=timing if t.processes else None,
                sample_shape=list(t.shape), sample_shape_reason=f"a size of the sweep ({size_name(t.shape, op)})",
                sample_timing=None, profile=t.profile, error=t.error, profile_error=None, points=[],
                operands=[o for o in r.operands if o.shape == t.shape])
            cases += [dict(c, label=name) for c in specs if c.get("label") == label]
        pairs += [[sized(b, shape, op), sized(h, shape, op)] for b, h in run.pairs
                  if all(sized(x, shape, op) in results and results[sized(x, shape, op)].profile for x in (b, h))]
    for g in groups:
        g.paired = g.paired and len(g.cases) > 1
    recorded = dict(run.config.recorded, cases=cases, pairs=pairs)
    return SweepCases(schema=run.schema, complete=run.complete, started=run.started, finished=run.finished,
                      command=run.command, config=RunConfig.of(recorded), env=run.env, groups=groups, results=results,
                      kind="compare", environments=run.environments, timing_stop=None, sweep=run)


def sizes_of(run: Run) -> list[list[int]]:
    """The sweep's sizes in order: its config's, then any a case has that the config does not name."""
    out = [list(s) for s in run.config.sizes or []]
    for r in run.results.values():
        out += [list(t.shape) for t in r.points if list(t.shape) not in out]
    return out


def case_named(run_dir: Path | str, run: Run, name: str, option: str, profiled: bool = True) -> str:
    """The case of `run` that `option` NAME names, as its results label it; for a sweep's sizes (as_cases) the
    size may be written as a shape too (cupy@1024x1024x1024 or cupy@1024,1024,1024 for cupy@1024), and with
    `profiled` only a size the case was profiled at is one. A name that names none is one line saying what the run
    has."""
    found = name if name in run.results else None
    if found is None and isinstance(run, SweepCases):
        label, shape = split(name)
        as_named = sized(label, shape, run.config.operation) if shape is not None else None
        if as_named in run.results:
            found = as_named
    if found is None:
        raise FlametoolError(f"{option} {name!r}: no such case in {run_dir} ({available(run, name, profiled)})")
    if profiled and isinstance(run, SweepCases) and run.results[found].profile is None:
        raise FlametoolError(f"{option} {name!r}: no profile of it in {run_dir} ({available(run, name, profiled)})")
    return found


def split(name: str) -> tuple[str, list[int] | None]:
    """CASE@SIZE as (CASE, the size's shape); (NAME, None) where NAME has no size."""
    label, sep, size = name.rpartition(SEPARATOR)
    if not sep or not SIZE.fullmatch(size):
        return name, None
    return label, [int(x) for x in re.split("[x,]", size)]


def available(run: Run, name: str, profiled: bool = True) -> str:
    """What a run's cases are, for a name that matched none; of a sweep's sizes (those profiled, with `profiled`),
    with why the case and size named is not one."""
    if not isinstance(run, SweepCases) or run.sweep is None:
        return f"cases: {', '.join(run.results) or 'none'}"
    with_profile = [l for l, r in run.results.items() if r.profile is not None]
    said = (f"a sweep: its profiles are CASE@SIZE, each case at each size it was profiled at: "
            f"{', '.join(with_profile) or 'none'}")
    if not profiled:
        timed = [l for l in run.results if l not in with_profile]
        said += f"; timed only: {', '.join(timed)}" if timed else ""
    label, shape = split(name)
    r = run.sweep.results.get(label)
    if r is None:
        return said
    if shape is None:
        return said + f"; {label} is one of its cases: add @SIZE"
    op = run.sweep.config.operation
    at = size_name(shape, op)
    t = next((t for t in r.points if size_name(t.shape, op) == at), None)
    if t is None:
        return said + f"; {label} was not timed at {at}"
    if t.error:  # its first line: a child's error may run on with its traceback
        return said + f"; {label} failed at {at} ({(t.error.strip().splitlines() or [''])[0]})"
    if host_bound(t) is False:
        why = "it was not host-bound there: --sample profiles each case at its host-bound sizes"
    else:
        why = "run.json records no profile there" + ("" if run.sweep.complete else ": the run did not finish")
    return said + f"; {label} was timed at {at}, not profiled ({why})"
