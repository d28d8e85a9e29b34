"""A run directory read whole, before its analysis starts: run.json's records (rundir.load), sources.json
(sources.load), the sizes of the cases' stack files, and what an analysis asks of the record at every turn,
derived from it once here: the op it measured, the compared pairs, and which of them were timed in the same
processes.

The analysis reads these fields and computes; it does not go back to the record's methods or the run
directory's files one question at a time as it works. This module sits above rundir.py and sources.py (it
reads through both), so that neither has to import the other."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from . import rundir, safeopen, sources
from ..errors import RunDirError
from .record import Run


@dataclass
class Loaded:
    """What an analysis of a run reads: the record and the values derived from it, each made once."""

    run_dir: Path
    run: Run
    op: str  # RunConfig.operation
    pairs: list[tuple[str, str]]  # Run.pairs, (base, head)
    together: dict[tuple[str, str], bool]  # each pair: its cases timed in the same processes (Run.paired)
    # each case with a stack file: its size in bytes (0 where it cannot be read: the reading says why)
    folded_bytes: dict[str, int] = field(default_factory=dict)
    sources: sources.Sources = field(default_factory=sources.Sources)  # sources.json (empty: none, or not read)
    # each case's cProfile file (files.prof, a name in the run directory), its bytes or why they cannot be read
    prof: dict[str, bytes | RunDirError] = field(default_factory=dict)


def read(run_dir: Path, run: Run, whole: bool = True) -> Loaded:
    """The record `run` of `run_dir` with what its analysis reads of it. whole=False leaves sources.json and the
    cProfile files unread (an export of stacks, an atlas's row of an op: no lines, no cProfile tables)."""
    folded_bytes: dict[str, int] = {}
    prof: dict[str, bytes | RunDirError] = {}
    for label, result in run.results.items():
        name = result.file("folded")
        if name is not None:
            folded_bytes[label] = _size(run_dir / name)
        name = result.file("prof")
        if whole and rundir.is_file_name(name):
            try:
                prof[label] = file_bytes(run_dir / name)
            except RunDirError as exc:  # kept: the view that shows its table says why it has none
                prof[label] = exc
    record = sources.load(run_dir) if whole else sources.Sources()
    pairs = run.pairs
    return Loaded(run_dir, run, run.config.operation, pairs, {(a, b): run.paired(a, b) for a, b in pairs},
                  folded_bytes, record, prof)


def file_bytes(path: Path) -> bytes:
    """A file of the run directory, whole: a regular file only, never through a link (safeopen); missing or not
    readable is one RunDirError naming it."""
    if not (path.exists() or path.is_symlink()):
        raise RunDirError(f"{path}: missing")
    return safeopen.read_bytes(path)


def load(run_dir: Path | str) -> Loaded:
    """The run directory read (strictly: rundir.load, sources.load)."""
    run_dir = Path(run_dir)
    return read(run_dir, rundir.load(run_dir))


def _size(path: Path) -> int:
    try:
        return safeopen.size(path)
    except RunDirError:  # load_profile says what is wrong with it
        return 0
