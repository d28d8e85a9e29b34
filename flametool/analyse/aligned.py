"""The lines of step() aligned across cases (issue 40, item 3): where two or more cases run the same step lines (a
workload's fn on every library, one case in two --env builds), one row per line, in source order, and per case its
host time per call at the line (self and total, from analyse/lines.py) and what the counted loop counted there
(run/counts.py's per-line counts: Python calls, CUDA API calls, kernels, copies, memsets, allocations, where
counted). A pure function of the cases' lines and counts; render/aligned_lines.py writes it for the terminal, the
report and the JSON summary.

Which cases: each case's step lines are its sampled step() lines and the lines its counted loop placed counts on.
Cases whose step lines share a file:line are one group; the largest group (the first in run order among equals)
is the table, its rows the group's step lines. Cases whose steps are other functions (cupy's and torch's built-in
steps, in one file but at other lines) share no line and make no table. A case outside the group that still has
samples at a row's line gets a column of host time. A case whose counted loop counted another function than its
samples' step (jax-eager: fn is sampled, the wrapper that calls it counted) has host time at the rows and no
per-line counts; the wrapper's lines join it to no other case (jitted jax, which runs none of fn's lines).

The file a line is in is named by the samples as py-spy names it (relative to the child's sys.path) and by the
per-line counts as the counted loop names it; where those differ ('workload_cases.py' against
'tests/cases/workload_cases.py') a file is the same file when one name ends with '/' + the other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Mapping, Sequence

from .attribution import Figure
from .lines import CaseLines, LineCost, same_file
from ..run.counts import COUNTED, OUTSIDE, Counts

Key = tuple[str, int]  # (file as the table names it, line)


@dataclass(frozen=True)
class Cell:
    """One case at one line. self/total: None where the case has no samples (not sampled); a sampled case with
    none at the line reads zero. counts: {kind: per step} of the kinds counted per line (a kind left out: none
    made at the line)."""

    self: Figure | None
    total: Figure | None
    counts: dict[str, Fraction] = field(default_factory=dict)


@dataclass(frozen=True)
class Row:
    file: str
    line: int
    text: str | None  # as sources.json (or the per-line counts) keep it; None: the file was not read
    cells: dict[str, Cell]  # by case label, every column's

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(frozen=True)
class Column:
    """A case of the table: its time per call (None: not sampled), the kinds it counted per line (in COUNTED's
    order; []: not counted per line), what its counted loop placed outside the table's lines (the window's edges,
    another thread), the lines' sum of each kind (rows and outside together) and the step's own count of it."""

    label: str
    us_per_call: float | None
    samples: int
    kinds: list[str]
    outside: dict[str, Fraction]
    line_sum: dict[str, Fraction]
    step: dict[str, Fraction]
    shares_step: bool  # one of the group whose step lines these are (else: host time at them only)


@dataclass(frozen=True)
class Aligned:
    file: str  # the step lines' file
    columns: list[Column]
    rows: list[Row]
    kinds: list[str] = field(init=False)  # every kind any column counted per line, in COUNTED's order

    def __post_init__(self) -> None:
        got = {k for c in self.columns for k in c.kinds}
        object.__setattr__(self, "kinds", [k.name for k in COUNTED if k.name in got])  # frozen: set once, here


def _names(sampled: set[str], steps: set[str], counted: set[str]) -> dict[str, str]:
    """Each file name -> the table's name of it: the samples' own, and a counted line's file as the samples name
    it where one of their files is the same file, their step files first (else as it is)."""
    out = {n: n for n in sampled}
    for n in counted - sampled:
        out[n] = next((s for s in [*sorted(steps), *sorted(sampled)] if same_file(s, n)), n)
    return out


def align(lines: Mapping[str, CaseLines], counts: Mapping[str, Counts | None],
          labels: Sequence[str]) -> Aligned | None:
    """The table of the cases `labels` (run order) that share step lines; None where no two do.

    lines: each sampled case's (analyse/lines.py's case_lines); counts: each counted case's counted loop (None or
    absent: not counted; a case without per-line counts has only host time)."""
    counted = {l: c for l in labels if (c := counts.get(l)) is not None and c.by_line}
    name = _names({x.file for l in labels if l in lines for x in lines[l].lines},
                  {x.file for l in labels if l in lines for x in lines[l].step_lines()},
                  {x.file for c in counted.values() for x in c.by_line if x.file != OUTSIDE})
    steps: dict[str, set[Key]] = {}
    for l in labels:
        mine = {(name[x.file], x.line) for x in lines[l].step_lines()} if l in lines else set()
        if l in counted:
            # the counted loop's step is the step the samples show, except where the samples' is a function it
            # calls (a workload's fn under jax-eager's step, which keeps the result): those counts are the
            # wrapper's lines, not fn's, and join the wrapper's other cases (jitted jax) to nothing
            files = {f for f, _ in mine}
            mine |= {(name[x.file], x.line) for x in counted[l].by_line
                     if x.file != OUTSIDE and (not files or name[x.file] in files)}
        if mine:
            steps[l] = mine
    group = _largest_group(steps, labels)
    if len(group) < 2:
        return None
    file = _main_file([k for l in group for k in steps[l]])
    keys = sorted({k for l in group for k in steps[l] if k[0] == file}, key=lambda k: k[1])
    sampled_at = {l: {(name[x.file], x.line): x for x in lines[l].lines} for l in labels if l in lines}
    members = [l for l in labels if l in group or any(k in sampled_at.get(l, {}) for k in keys)]
    # only the group's counts are at these lines, and only where they were counted at this file's lines: another
    # case's are at its own step's lines, jax-eager's at the wrapper around fn (not counted per line of fn)
    here = {l: counted[l] for l in group if l in counted
            and any(x.file != OUTSIDE and name[x.file] == file for x in counted[l].by_line)}
    counts_at = {l: {(name[x.file], x.line): x.counts for x in c.by_line if x.file != OUTSIDE}
                 for l, c in here.items()}
    rows = []
    for key in keys:
        cells = {l: _cell(sampled_at.get(l, {}).get(key), l in sampled_at, counts_at.get(l, {}).get(key, {}))
                 for l in members}
        rows.append(Row(key[0], key[1], _text(key, [sampled_at.get(l, {}).get(key) for l in members],
                                              list(here.values()), name), cells))
    columns = [_column(l, lines.get(l), here.get(l), set(keys), name, l in group)
               for l in members]
    return Aligned(file, columns, rows)


def _largest_group(steps: dict[str, set[Key]], labels: Sequence[str]) -> list[str]:
    """The cases joined by shared step lines (a case sharing a line with any of the group joins it), the largest
    group, the first in run order among equals."""
    groups: list[tuple[list[str], set[Key]]] = []
    for l in labels:
        if l not in steps:
            continue
        mine = [g for g in groups if g[1] & steps[l]]
        merged = ([m for g in mine for m in g[0]] + [l], set(steps[l]).union(*(g[1] for g in mine)))
        groups = [g for g in groups if g not in mine] + [merged]
    groups.sort(key=lambda g: min(labels.index(m) for m in g[0]))
    best = max(groups, key=lambda g: len(g[0]), default=([], set()))
    return sorted(best[0], key=labels.index)


def _main_file(keys: list[Key]) -> str:
    """The file most of the group's step lines are in (a step is one function: one file, all but always)."""
    tally: dict[str, int] = {}
    for f, _ in keys:
        tally[f] = tally.get(f, 0) + 1
    return max(tally, key=lambda f: tally[f])


def _cell(cost: LineCost | None, sampled: bool, counted: dict[str, Fraction]) -> Cell:
    if cost is not None:
        return Cell(cost.self, cost.total, dict(counted))
    zero = Figure(0.0, 0.0, 0) if sampled else None
    return Cell(zero, zero, dict(counted))


def _text(key: Key, costs: list[LineCost | None], counted: list[Counts], name: dict[str, str]) -> str | None:
    for c in costs:
        if c is not None and c.text is not None:
            return c.text
    for cs in counted:
        for x in cs.by_line:
            if x.file != OUTSIDE and (name[x.file], x.line) == key and x.text is not None:
                return x.text
    return None


def _column(label: str, case: CaseLines | None, c: Counts | None, keys: set[Key], name: dict[str, str],
            shares: bool) -> Column:
    kinds = [k.name for k in COUNTED if c is not None and k.name in c.by_line_kinds]
    outside: dict[str, Fraction] = {}
    for x in c.by_line if c is not None else []:
        if x.file == OUTSIDE or (name[x.file], x.line) not in keys:
            for k, v in x.counts.items():
                outside[k] = outside.get(k, Fraction(0)) + v
    return Column(label, case.us_per_call if case is not None else None, case.samples if case is not None else 0,
                  kinds, {k: v for k, v in outside.items() if v},
                  {k: c.line_total(k) for k in kinds} if c is not None else {},
                  {k: c.placed_total(k) for k in kinds} if c is not None else {}, shares)
