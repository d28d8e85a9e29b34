"""Untrusted text in the terminal's tables (test_untrusted.py's hostile names, in the tables it does not reach): a
run directory from another machine names its cases, files and lines as it likes; each table prints them as text,
control characters as escapes ('\\x1b[2J' clears nothing) and rich markup as written ('[bold]'), drawn whole as
every other table is (terminal.show)."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

from runbuild import make_run

from flametool import render
from flametool.analyse import dispatch
from flametool.render.base import Options
from flametool.run import rundir
from flametool.run.counts import Counts, LineCounts, Tally

EVIL = "evil\x1b[2J[bold red]case"  # a case's name (no "/": it names a file): clears the screen, then markup
FILE = "tests/cases/workload_cases.py"


def counted_run(tmp_path: Path) -> Path:
    """Two cases counted per line of step(), one named EVIL, its line's file and text hostile too."""
    stack = f"fn ({FILE}:10);helper (lib.py:3) 9\n"
    run = make_run(tmp_path / "run", {"numpy": (stack, 5.0, 2), EVIL: (stack, 6.0, 2)})
    data = rundir.load(run)
    for label, r in data.results.items():
        hostile = label == EVIL
        lines = [LineCounts(FILE, 10, {"python": Fraction(1)}, "def fn(a, b):"),
                 LineCounts(f"odd\x1b]8;;x\x07/[red]f.py" if hostile else FILE, 13, {"python": Fraction(7)},
                            "e = xp.sum(d)  # \x1b[31m[bold]red[/bold]" if hostile else "e = xp.sum(d, axis=0)")]
        assert r.profile is not None
        # blocks kept too: its header's words ('host blocks kept (net)') took the width the paths were folded in
        r.profile.counts = Counts(100, 100, [Tally("python", "all", Fraction(8))], by_line=lines,
                                  by_line_kinds=["python", "host-alloc"])
    rundir.save(run, data)
    return run


def test_the_tables_counted_per_line_print_hostile_names_as_text(tmp_path):
    a = dispatch.analyse_dir(counted_run(tmp_path))
    for width in (80, 160):
        out = render.show("terminal", a, Options(width=width))
        tables = out[out.index("counted per line of step()") - 60:out.index("run directory:")]
        assert "\x1b" not in tables and "\x07" not in tables, tables
        assert "evil\\x1b[2J[bold red]case: counted per line of step()" in tables, tables
        assert "odd\\x1b]8;;x\\x07/[red]f.py:13" in tables and "[bold]red[/bold]" in tables, tables
        # a path is one word, whole on its line (folded it read 'tests/cases/workloa' over 'd_cases.py:10')
        assert f"{FILE}:10" in tables and f"{FILE}:13" in tables, tables
        assert max(map(len, tables.splitlines())) <= width, tables
