"""The run directory: the one interface between measuring and everything after it.

A run directory holds ``run.json`` (the records of record.py), one ``<label>.prof`` (cProfile) and one
``<label>.folded`` (py-spy raw folded stacks, filtered to the active loop) per profiled case, and later
``report.html``.  Everything downstream (analysis, report, diff, export, snakeviz) reads only this.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from . import record
from .errors import FlametoolError, RunDirError

SCHEMA = record.SCHEMA
RUN_FILE = "run.json"


def prof_path(run: Path, label: str) -> Path:
    return run / f"{label}.prof"


def folded_path(run: Path, label: str) -> Path:
    return run / f"{label}.folded"


def write_atomic(path: Path, text: str) -> None:
    """Write via a temporary file in the same folder and rename, so a reader never sees half a file."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes it private; a run directory is meant to be shared
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def save(run: Path, data: record.Run) -> None:
    write_atomic(run / RUN_FILE, json.dumps(data.to_json(), indent=2, allow_nan=False) + "\n")


def load(run: Path | str) -> record.Run:
    """Read and check a run directory's run.json; every problem is one RunDirError naming the file."""
    run = Path(run)
    if not run.exists():
        raise RunDirError(f"{run}: no such run directory")
    if not run.is_dir():
        raise RunDirError(f"{run}: not a directory")
    path = run / RUN_FILE
    if not path.is_file():
        raise RunDirError(f"{path}: missing (is {run} a flametool run directory?)")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise RunDirError(f"{path}: cannot be read as JSON ({type(exc).__name__}: {str(exc)[:100]})") from None
    return record.Run.from_json(data, str(path))


def ensure_new(out: Path) -> None:
    """Refuse to write into an existing, non-empty folder: a run is never overwritten silently."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise FlametoolError(f"{out}: already exists and is not empty; choose another --out")


def create(out: Path) -> None:
    """Make the run directory (an existing empty one is used as is), or say why it cannot be made."""
    ensure_new(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / f".{RUN_FILE}.probe"  # a directory that can be made may still not be writable
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        raise FlametoolError(f"{out}: cannot create the run directory ({exc.strerror or exc}); choose another --out") from None
