"""Which analysis a run directory gets, by the kind of run it holds: a compare's (compare), a sweep's (sweep)
or an atlas's (atlas, which analyses each op's compare run through compare). The one entry every command and
view uses, so no module below it needs to know the others."""

from __future__ import annotations

from pathlib import Path

from . import atlas, compare, sweep
from ..run import rundir
from ..run.record import Run

AnyAnalysis = compare.Analysis | sweep.SweepAnalysis | atlas.AtlasAnalysis


def analyse(run_dir: Path, run: Run, attribute: bool = True) -> AnyAnalysis:
    """The run's analysis; attribute=False (a compare run only) reads the stacks without attributing them."""
    if run.kind == "sweep":
        return sweep.analyse(run_dir, run)
    if run.kind == "atlas":
        return atlas.analyse(run_dir, run)
    made = compare.analyse(run_dir, run, attribute)
    return made.complete() if attribute else made  # everything the views show, before any of them runs


def analyse_dir(run_dir: Path | str, attribute: bool = True) -> AnyAnalysis:
    """The run directory loaded (strictly: rundir.load) and analysed."""
    run_dir = Path(run_dir)
    return analyse(run_dir, rundir.load(run_dir), attribute)
