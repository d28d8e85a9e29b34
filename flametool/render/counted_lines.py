"""The counted loop per line of step() (issue 39, item 4) and the GPU's busy share of one step (issue 40, item 4),
for the terminal and the report: one small table per case that was counted per line (the line, its text, each
kind counted per line, exact per step) and one line per case with a timeline. Hooked into the counted sections
of render/compare_tables.py (print_tables) and render/html.py (view: its tables and lines, the partial
counts_by_line.html.j2). A run recorded before either has neither: the views are as they were."""

from __future__ import annotations

from dataclasses import dataclass, field

from rich.console import Console

from ..analyse.compare import Analysis
from ..run import counts
from ..run.counts import Counts, count_words
from ..run.sources import clean_text
from .terminal import say, show, text, titled

TITLE = "counted per line of step() (exact, per step)"
MAX_TEXT = 60  # of a line's text, in a table


@dataclass(frozen=True)
class LineTable:
    """One case's lines: headers ('line', 'text', then each kind's title) and rows of cells."""

    label: str
    headers: list[str]
    rows: list[list[str]]


@dataclass
class CountedLines:
    tables: list[LineTable] = field(default_factory=list)
    busy: list[str] = field(default_factory=list)  # 'cupy: GPU busy 23% of the step ...'

    def __bool__(self) -> bool:
        return bool(self.tables or self.busy)


def shorten(text: str | None, most: int = MAX_TEXT) -> str:
    if not text:
        return ""
    text = clean_text(text)
    return text if len(text) <= most else text[: most - 1] + "…"


def table(label: str, c: Counts) -> LineTable | None:
    """A case's per-line table, None where it was not counted per line."""
    if not c.by_line:
        return None
    kinds = [k for k in counts.COUNTED if k.name in c.by_line_kinds]
    rows = [[l.where, shorten(l.text), *(count_words(l.counts[k.name]) if k.name in l.counts else "" for k in kinds)]
            for l in c.by_line]
    rows.append(["step()", "(the lines' sum)", *(count_words(c.line_total(k.name)) for k in kinds)])
    return LineTable(label, ["line", "text", *(k.line_title for k in kinds)], rows)


def view(a: Analysis) -> CountedLines:
    """Every counted case's lines and every case's GPU busy line, in the run's order."""
    out = CountedLines()
    for label, r in a.run.results.items():
        c = r.profile.counts if r.profile is not None else None
        got = table(label, c) if c is not None else None
        if got is not None:
            out.tables.append(got)
    out.busy = [f"{label}: {b.words()}" for label, b in a.gpu_busy.items()]
    return out


def print_tables(a: Analysis, console: Console) -> None:
    """The terminal's per-line tables and busy lines (nothing for a run without them), drawn as every other table
    is (terminal.show: no word cut, a path never folded inside it, 'tests/cases/workloa' over 'd_cases.py:10'),
    the label and every cell made visible (a run from another machine may name a case '\\x1b[2J')."""
    got = view(a)
    for t in got.tables:
        grid = titled(f"{t.label}: {TITLE}")
        for i, h in enumerate(t.headers):
            grid.add_column(text(h), justify="left" if i < 2 else "right")
        for row in t.rows:
            grid.add_row(*(text(cell) for cell in row))
        show(console, grid)
    for line in got.busy:
        say(console, line)
