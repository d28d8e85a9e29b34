"""The report's cProfile section: each case's table of the functions with most own time per step() call, the
commands that open its .prof file in snakeviz, and what the cProfile loop cost."""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from . import format as fmt
from ..run import rundir
from ..analyse.compare import Analysis

us, num = fmt.us, fmt.num


@dataclass
class ProfileRow:
    function: str
    cells: list[tuple[str, float]]


@dataclass
class CProfileCase:
    label: str
    file: str
    commands: list[str]
    summary: str
    rows: list[ProfileRow]
    note: str


def cprofile_cases(a: Analysis) -> list[CProfileCase]:
    run, data = a.run_dir, a.run
    out = []
    for label, r in data.results.items():
        name = r.file("prof")
        commands = [f"flametool snakeviz {rundir.shell_word(run)} --case {shlex.quote(label)}"]
        if not rundir.is_file_name(name):
            out.append(CProfileCase(label, "", [], "", [], "no cProfile file for this case"
                                    + (" (it failed)" if r.error else "")))
            continue
        path = run / name
        commands.append(f"snakeviz {rundir.shell_word(path)}")
        table = a.cprofile[label]
        if isinstance(table, Exception):  # the file could not be read: the report says so as `report` always did
            raise table
        assert table is not None  # it has a .prof (checked above, as cprofile_table checks)
        prof = r.profile
        steps = prof.cprofile_calls if prof else None
        rows, n = table.rows, table.functions
        per = "per step() call" if steps else "in the whole profile (number of calls unknown)"
        own = prof.own_us_per_call if prof else None
        summary = (f"{us(prof.cprofile_us_per_call if prof else None)} per call under cProfile"
                   + (f", {prof.cprofile_inflation:.2f}× the unsampled loop of the same process ({us(own)})"
                      if prof and prof.cprofile_inflation else "")
                   + (f"; {steps:,} calls profiled" if steps else "") + f"; top {len(rows)} of {n} functions by own time, {per}.")
        out.append(CProfileCase(label, name, commands, summary, [ProfileRow(row.function, [
            (f"{row.calls_per_step:,.3g}", row.calls_per_step),
            (num(row.self_us), row.self_us),
            (num(row.cumulative_us), row.cumulative_us),
        ]) for row in rows], ""))
    return out
