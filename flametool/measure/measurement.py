"""The run being measured, as every phase of the parent (measure/paired, sweeping, profiling) sees it: its
config, its record (saved after every process), its progress line and the spare children started ahead; and
the two ways a run stops early."""

from __future__ import annotations

import re
from pathlib import Path

from .forking import ForkServers
from .spawn import Progress, Spares, has_output
from ..run import rundir
from ..run import sources as rec
from ..workload.cases import CaseSpec
from .config import Config
from ..errors import CaseError, FlametoolError
from ..run.profiled import ProfileProcess
from ..run.record import Run


class Measurement:
    """The run being measured: its record, saved after every process."""

    def __init__(self, config: Config, run: Run, progress: Progress) -> None:
        self.config, self.run, self.progress = config, run, progress
        self.out = config.out
        self.steps: dict[str, int] = {}  # calls of step() per loop at the sample shape, per case
        self.spares = Spares(config, self.out)
        self.forks = ForkServers(config, self.out)  # compare's timing processes, forked (none for a sweep)
        self.timing_started: float | None = None  # time.monotonic() when the first timing process started
        # each profiled process's line texts (profiling.line_texts), by its case's label and its name (LABEL, or
        # LABEL@SIZE in a sweep)
        self.sources: dict[tuple[str, str], rec.Sources] = {}

    def save(self) -> None:
        rundir.save(self.out, self.run)

    def save_sources(self) -> None:
        """sources.json of the lines every profiled case's samples name (none sampled: no file, as before)."""
        if self.sources:  # merged in the cases' order (compare profiles the next case from inside the one before),
            # a case's processes in the order they ended (sorted() keeps it)
            order = {c.label: i for i, c in enumerate(self.config.cases)}
            kept = sorted(self.sources, key=lambda key: order.get(key[0], len(order)))
            rec.save(self.out, rec.merge((key[0], self.sources[key]) for key in kept))

    def case_groups(self) -> list[list[CaseSpec]]:
        """The cases that share processes: all of them, or with --env those of each environment."""
        envs = [e.name for e in self.config.environments]
        if not envs:
            return [self.config.cases]
        return [[c for c in self.config.cases if c.env == e] for e in envs]


def stop_if_refused(label: str, profile: ProfileProcess, out: Path) -> None:
    """The kernel refused py-spy's attach: it will refuse every case alike, so stop here, with what to change
    (what was measured is saved before this is asked)."""
    if profile.sampling is not None and profile.sampling.refused:
        raise FlametoolError(f"case {label!r}: {profile.sampling.error} (its timings and cProfile are kept in {out})")


def case_logs(out: Path, label: str, groups: list[list[str]]) -> list[Path]:
    """The logs in `out` that hold what the case's processes printed: its own (`LABEL.log` of its profiled
    process, `LABEL-timing*.log` of processes it was timed in alone) where there are any, else those of the
    timing processes it shared (`A+LABEL-timing*.log`): a factory that raises in the first of these has no other.
    A log's cases are its group's (`groups`, the run's): a group of many cases names its logs after some of them
    (rundir.group_stem)."""
    named = {rundir.group_stem(cases): cases for cases in groups}

    def cases_of(log: Path) -> list[str]:
        stem = re.sub(r"-(timing|sweep)(-\d+)?$", "", log.name.removesuffix(".log"))
        return named.get(stem, stem.split("+"))

    logs = sorted(p for p in out.glob("*.log") if has_output(p))  # an empty log says nothing
    return [p for p in logs if cases_of(p) == [label]] or [p for p in logs if label in cases_of(p)]


def printed_logs(out: Path, run: Run, label: str) -> list[str]:
    """The names of the logs in `out` that hold what a failed case printed (case_logs), less any its error names
    already (exit_story's)."""
    error = run.results[label].error or ""
    return [p.name for p in case_logs(out, label, [g.cases for g in run.groups]) if str(p) not in error]


def stop_if_failed(run: Run, config: Config) -> None:
    failed = [l for l, r in run.results.items() if r.error]
    if failed and not config.keep_going:
        label = failed[0]
        logs = printed_logs(config.out, run, label)
        printed = f"; what it printed: {', '.join(logs)}" if logs else ""  # in that folder
        raise CaseError(f"case {label!r}: {run.results[label].error} (finished cases kept in {config.out}{printed})")
