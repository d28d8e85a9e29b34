"""A case's cProfile file (<label>.prof) read with pstats: the functions that cost the most per step() call."""

from __future__ import annotations

import io
import marshal
import math
import pstats
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, cast

from ..run import loaded
from ..errors import RunDirError

if TYPE_CHECKING:
    import cProfile

TOP = 15


@dataclass
class Row:
    function: str  # 'file:line(name)' as pstats prints it; '{built-in method ...}' for C functions
    calls_per_step: float
    self_us: float  # per step() call
    cumulative_us: float


def read(path: Path) -> pstats.Stats:
    """pstats.Stats of a .prof file; any reason it cannot be read is one RunDirError naming the file."""
    return parse(loaded.file_bytes(path), path)


def parse(raw: bytes, path: Path) -> pstats.Stats:
    """pstats.Stats of a .prof file's bytes (read from `path`, which errors name): a RunDirError if it is not one."""
    try:
        table = marshal.loads(raw)
    except Exception as exc:  # unmarshalling a foreign or truncated file raises almost anything
        raise RunDirError(f"{path}: pstats cannot read it ({type(exc).__name__}: {exc})") from None
    problem = check_table(table)
    if problem:
        raise RunDirError(f"{path}: pstats cannot read it ({problem})")
    try:
        # pstats prints its complaints to stdout before raising; they go nowhere, the error says it
        # (pstats takes any object with create_stats and stats; its stubs name only the profilers)
        return pstats.Stats(cast("cProfile.Profile", Table(table)), stream=io.StringIO())
    except Exception as exc:  # noqa: BLE001 - whatever else pstats finds wrong with it
        raise RunDirError(f"{path}: pstats cannot read it ({type(exc).__name__}: {exc})") from None


class Table:
    """An unmarshalled function table handed to pstats.Stats (which takes an object with create_stats), so the
    file pstats reads is the one safeopen opened, not a path it would open again."""

    def __init__(self, stats: dict) -> None:
        self.stats = stats

    def create_stats(self) -> None:
        pass


def check_table(table) -> str | None:
    """What is wrong with a cProfile table (None when nothing): every entry {(file, line, name): (cc, nc, tt,
    ct, callers)}, counts whole numbers 0 or more and times finite numbers 0 or more, as cProfile writes
    them; a crafted file with a string or NaN where a time belongs is refused, not printed as 'nan'."""
    if not isinstance(table, dict):
        return "no function table"

    def bad_entry(key, value) -> bool:
        if not (isinstance(key, tuple) and len(key) == 3 and isinstance(key[0], str) and isinstance(key[1], int)
                and isinstance(key[2], str)):
            return True
        if not (isinstance(value, tuple) and len(value) == 5 and isinstance(value[4], dict)):
            return True
        counts, times = value[:2], value[2:4]
        return not (all(type(c) is int and c >= 0 for c in counts)
                    and all(type(t) in (int, float) and math.isfinite(t) and t >= 0 for t in times))

    for key, value in table.items():
        if bad_entry(key, value):
            return f"entry {str(key)[:80]} is not a function's counts and times"
        for caller, figures in value[4].items():
            if bad_entry(caller, figures + ({},) if isinstance(figures, tuple) and len(figures) == 4 else None):
                return f"entry {str(key)[:80]}: caller {str(caller)[:80]} is not a caller's counts and times"
    return None


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
