"""A case's cProfile file (<label>.prof) read with pstats: the functions that cost the most per step() call."""

from __future__ import annotations

import io
import pstats
from dataclasses import dataclass
from pathlib import Path

from .errors import RunDirError

TOP = 15


@dataclass
class Row:
    function: str  # 'file:line(name)' as pstats prints it; '{built-in method ...}' for C functions
    calls_per_step: float
    self_us: float  # per step() call
    cumulative_us: float


def load(path: Path) -> pstats.Stats:
    """pstats.Stats of a .prof file; any reason it cannot be read is one RunDirError naming the file."""
    if not path.is_file():
        raise RunDirError(f"{path}: missing")
    try:
        # pstats prints its complaints to stdout before raising; they go nowhere, the error says it
        stats = pstats.Stats(str(path), stream=io.StringIO())
    except Exception as exc:  # unmarshalling a foreign or truncated file raises almost anything
        raise RunDirError(f"{path}: pstats cannot read it ({type(exc).__name__}: {exc})") from None
    if not isinstance(getattr(stats, "stats", None), dict):
        raise RunDirError(f"{path}: pstats cannot read it (no function table)")
    return stats


def label(func: tuple[str, int, str]) -> str:
    file, line, name = func
    if file == "~" and line == 0:  # pstats' marker for C functions
        return name
    return f"{file}:{line}({name})"


def top(stats: pstats.Stats, steps: int | None, n: int = TOP) -> tuple[list[Row], int]:
    """The n functions with the most own time, per step() call when the number of calls is known
    (else per profile, steps=1); and how many functions the profile holds."""
    per = max(steps or 1, 1)
    entries = stats.stats  # type: ignore[attr-defined]
    ranked = sorted(entries.items(), key=lambda kv: (-kv[1][2], -kv[1][3], label(kv[0])))
    rows = [Row(label(func), nc / per, tt * 1e6 / per, ct * 1e6 / per)
            for func, (cc, nc, tt, ct, _callers) in ranked[:n]]
    return rows, len(entries)
