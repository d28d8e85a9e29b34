"""The lines of step() aligned across cases (analyse/aligned.py) as the views show them: a table of strings for the
terminal (render/terminal.py's print_aligned chooses how much of it fits) and the report (the partial
aligned_lines.html.j2), and the JSON summary's `aligned_lines` (docs/summary-json.md). A run whose cases share no
step line has none of them: every view is as it was.

A line's text is data from the measuring host: made visible and shortened here (lines_view.short), escaped by each
renderer its own way."""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from . import format as fmt, lines_view
from ..analyse.aligned import Aligned, Cell, Column
from ..analyse.compare import Analysis
from ..run.counts import KINDS, count_words, fraction_text

SELF, TOTAL = "self", "total"
WITH = "total+"  # WITH + a kind: one cell of total us and that count, '4.50 (2)' (the narrowest table)
TITLE = "lines aligned: {file}, us per call, counts per step"
SHORT = {"python": "Py calls", "api": "API calls", "kernel": "kernels", "copy": "copies", "memset": "memsets",
         "device-alloc": "dev allocs", "host-alloc": "host kept"}  # the terminal's headers (host: blocks kept, net)
KEY = ("self: the line's own code; total: with all it calls; us per call, " + lines_view.LINE_SE + ", each case "
       "at its own time per call; counts exact per step, one that is not whole rounded here (blank: none at the line; "
       "{dash}: not counted per line, or not sampled); the lines' sum, with what no line made, is the step's count")
NOT_SHARING = "{label}: its step is another function; its host time at these lines only"
NOTE = ("One row per line of the step the cases share, in source order, a column group per case: host time per call "
        "from the samples (self: the line's own code; total: with all it calls; " + lines_view.LINE_SE + "), and what "
        "the counted loop counted at the line, exact per step. Blank: none at the line; {dash}: not counted per line "
        "(or not sampled). The last row is the lines' sum, what no line made included: the step's own count. "
        "See docs/workloads.md.").format(dash=fmt.DASH)


@dataclass
class Group:
    """A case's columns: its label and the header of each of its cells."""

    label: str
    headers: list[str]


@dataclass
class ViewRow:
    line: str  # the line's number, or what the row is ('outside', 'step()')
    code: str
    cells: list[list[str]]  # per group, per header
    kind: str = "line"  # 'line', 'outside' (what no line of the table made), 'sum'


@dataclass
class AlignedView:
    title: str
    groups: list[Group]
    rows: list[ViewRow]
    notes: list[str] = field(default_factory=list)  # columns of cases that do not share the step


def main_kind(a: Aligned) -> str | None:
    """The count a narrow table keeps: kernels where any case counted them, else Python calls, else the first."""
    kinds = a.kinds
    return next((k for k in ("kernel", "python") if k in kinds), kinds[0] if kinds else None)


def _figure(c: Cell, which: str, spread: bool) -> str:
    f = c.self if which == SELF else c.total
    if f is None:
        return fmt.DASH
    return fmt.pm(f.us_per_call, f.se_us) if spread else fmt.num(f.us_per_call)


def words(value: Fraction, short: bool) -> str:
    """A count as count_words writes it ('3', '0.25 (1/4)'); `short`: one that is not whole rounded ('0.25')."""
    return f"{float(value):.3g}" if short and value.denominator != 1 else count_words(value)


def _count(col: Column, kind: str, got: dict[str, Fraction], short: bool = False) -> str:
    if kind not in col.kinds:
        return fmt.DASH
    value = got.get(kind, Fraction(0))
    return words(value, short) if value else ""


def view(a: Aligned, fields: list[str], spread: bool = True, code_width: int = lines_view.TEXT_WIDTH,
         short: bool = False) -> AlignedView:
    """The table with, per case, the cells `fields` names (SELF, TOTAL, kinds), `spread`: with ± one standard
    error; `short`: as the terminal writes them, the kinds' headers (SHORT) and a count that is not whole
    rounded."""
    names = dict(SHORT) if short else {k: KINDS[k].line_title for k in KINDS}
    names.update({WITH + k: f"us ({names[k]})" for k in a.kinds})
    groups = [Group(c.label, [names.get(f, f) for f in fields]) for c in a.columns]

    def both(time: str, count: str) -> str:
        return f"{time} ({count})" if count and count != fmt.DASH else time

    rows = []
    for r in a.rows:
        cells = []
        for col in a.columns:
            cell = r.cells[col.label]
            got = {**{f: _figure(cell, f, spread) for f in (SELF, TOTAL)},
                   **{k: _count(col, k, cell.counts, short) for k in a.kinds}}
            got.update({WITH + k: both(got[TOTAL], got[k]) for k in a.kinds})
            cells.append([got[f] for f in fields])
        rows.append(ViewRow(str(r.line), lines_view.short(r.text.strip(), code_width) if r.text else "", cells))
    counted = [f.removeprefix(WITH) for f in fields]
    if any(c.outside.get(f) for c in a.columns for f in counted):  # only where a shown count has some there
        rows.append(ViewRow("", lines_view.short("outside these lines", code_width), [
            ["" if f in (SELF, TOTAL) else _count(col, f, col.outside, short) for f in counted] for col in a.columns],
            "outside"))

    def step_cell(col: Column, f: str) -> str:
        us = fmt.num(col.us_per_call) if col.us_per_call is not None else fmt.DASH
        kind = f.removeprefix(WITH)
        count = words(col.line_sum[kind], short) if kind in col.kinds else fmt.DASH
        return "" if f == SELF else us if f == TOTAL else both(us, count) if f.startswith(WITH) else count

    rows.append(ViewRow("step()", lines_view.short("(the lines' sum)", code_width),
                        [[step_cell(col, f) for f in fields] for col in a.columns], "sum"))
    notes = [NOT_SHARING.format(label=fmt.visible(c.label)) for c in a.columns if not c.shares_step]
    return AlignedView(TITLE.format(file=lines_view.where(a.file)), groups, rows, notes)


def full_fields(a: Aligned) -> list[str]:
    return [SELF, TOTAL, *a.kinds]


def narrowed(a: Aligned) -> list[tuple[list[str], bool, str]]:
    """The terminal's tables from the widest to the narrowest: (fields, with ±, what it leaves out, in words)."""
    k = main_kind(a)
    main = [k] if k is not None else []
    left = ", ".join(KINDS[x].title for x in a.kinds if x != k)
    out: list[tuple[list[str], bool, str]] = [(full_fields(a), True, "")]
    if left:
        out.append(([SELF, TOTAL, *main], True, f"{left} left out to fit"))
    shown = f"total us and {KINDS[k].title} only" if k is not None else "total us only"
    out.append(([TOTAL, *main], True, f"{len(a.columns)} cases: each shows {shown}, to fit"))
    out.append(([TOTAL, *main], False, f"{len(a.columns)} cases: each shows {shown}, without its ±, to fit"))
    if k is not None:
        out.append(([WITH + k], False, f"{len(a.columns)} cases: each shows {shown} (in parentheses), without its "
                                        "±, to fit"))
    return out


WIDER = "; the report and `flametool summary RUN --format json` have every figure"


def in_table(a: Analysis, base: str, head: str) -> bool:
    """Whether both cases of a pair are columns of the aligned table (its lines that differ most are said under it)."""
    shown = {c.label for c in a.aligned.columns} if a.aligned is not None else set()
    return base in shown and head in shown


def pair_sentences(a: Analysis, top: int = lines_view.SUMMARY_LINES) -> list[tuple[str, list[str]]]:
    """Each pair of the table's cases: ('head − base', the lines that differ most, one sentence each)."""
    return lines_view.pair_sentences(a, lambda base, head: in_table(a, base, head), top)


# --- the report ------------------------------------------------------------------------------------------------

@dataclass
class AlignedSection:
    table: AlignedView
    key: str


def section(a: Analysis) -> AlignedSection | None:
    """The report's table (every figure); None where no two cases share step lines."""
    if a.aligned is None:
        return None
    return AlignedSection(view(a.aligned, full_fields(a.aligned), code_width=80), NOTE)


# --- the JSON summary -------------------------------------------------------------------------------------------

def _counts(got: dict[str, Fraction]) -> dict[str, str | None]:
    return {k: fraction_text(v) for k, v in got.items()}


def _cell_json(c: Cell) -> dict[str, Any]:
    def fig(which: str) -> dict[str, Any]:
        f = c.self if which == SELF else c.total
        return ({f"{which}_us": None, f"{which}_se_us": None, f"{which}_samples": None} if f is None else
                {f"{which}_us": f.us_per_call, f"{which}_se_us": f.se_us, f"{which}_samples": f.samples})

    return {**fig(SELF), **fig(TOTAL), "counts": _counts(c.counts)}


def to_json(a: Aligned) -> dict[str, Any]:
    """The summary's `aligned_lines` (docs/summary-json.md)."""
    return {
        "file": a.file,
        "cases": [{"label": c.label, "shares_step": c.shares_step, "us_per_call": c.us_per_call,
                   "samples": c.samples, "kinds": list(c.kinds), "outside": _counts(c.outside),
                   "lines_sum": _counts(c.line_sum), "step": _counts(c.step)} for c in a.columns],
        "rows": [{"file": r.file, "line": r.line, "text": r.text,
                  "cases": {label: _cell_json(c) for label, c in r.cells.items()}} for r in a.rows],
    }
