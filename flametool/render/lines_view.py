"""The source lines of a run as the views show them (issue 39): the terminal's hottest lines of each case, the
report's annotated listings (the case's step() and its hottest functions, line by line), and the lines two cases,
runs or builds differ most in (summary, diff). The figures are analyse/lines.py's; here they are chosen and
written as strings, no markup.

A line's text and a frame's file name are data from the measuring host (a case file, a library, a hand-written
sources.json): each is made visible (format.visible: control characters as escapes) and shortened here, and each
renderer escapes it its own way: the terminal prints it as rich Text (never read as markup), the report's
templates autoescape, JSON holds it as a string. A line whose file was not found shows as file:line alone."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from . import format as fmt
from ..analyse.compare import Analysis
from ..analyse.attribution import Figure
from ..analyse.lines import CaseLines, LineCost, LineDelta
from ..run.sources import Sources

STEP_LINES = 8  # of a case's step() lines, the terminal shows at most this many (in source order)
HOT_LINES = 3  # then its hottest other lines by own time
TEXT_WIDTH = 56  # characters of a line's text in a table
WHERE_WIDTH = 60  # characters of file:line (a path is cut from the left: the name and line are what tell)
DIFF_LINES = 10  # rows of a diff's table of the lines that differ most
SUMMARY_LINES = 3  # lines of the text and Markdown summaries
JSON_LINES = 50  # lines of a pair in the JSON summary (docs/summary-json.md), with every step() line besides
LISTED_FUNCTIONS = 4  # functions listed under a case's step() in the report, by their lines' own time
LISTING_SPAN = 60  # a function's lines listed one by one, its lines without samples among them (greyed)


def short(text: str, width: int = TEXT_WIDTH) -> str:
    """Visible text of at most `width` characters, cut at the end with '…'."""
    text = fmt.visible(text)
    return text if len(text) <= width else text[: width - 1] + "…"


def where(text: str, width: int = WHERE_WIDTH) -> str:
    """file:line, visible, at most `width` characters: a long path cut at its start."""
    text = fmt.visible(text)
    return text if len(text) <= width else "…" + text[-(width - 1):]


def delta_where(d: LineDelta, width: int = WHERE_WIDTH) -> str:
    """A matched pair's place: 'file:line', or 'base file:line -> head file:line' where the two differ. Too long
    for `width`, each side is cut on its own (cut whole, at its start, the base's path lost its name and the
    head's stayed whole: '…kload/libraries.py:42 -> flametool/workload/libraries.py:73'); two lines of one file
    name the file once ('flametool/workload/libraries.py:42 -> line 73')."""
    b, h = d.base, d.head
    if b is None or h is None or len(fmt.visible(d.where)) <= width:
        return where(d.where, width)
    if b.file == h.file:
        tail = f" -> line {h.line}"
        return where(b.where, width - len(tail)) + tail
    half = (width - 4) // 2
    return f"{where(b.where, half)} -> {where(h.where, half)}"


def code(line: LineCost | None, width: int = TEXT_WIDTH) -> str:
    """A line's text as a table shows it (indentation dropped); for generated C/C++ mapped to a .pyx line, that
    line's text, after its place; '' where the file was not found (the row shows file:line alone)."""
    if line is None:
        return ""
    if line.pyx is not None:
        return short(f"{line.pyx.file}:{line.pyx.line}: {(line.pyx.text or '').strip()}".rstrip(": "), width)
    return short(line.text.strip(), width) if line.text else ""


def delta_code(d: LineDelta, width: int = TEXT_WIDTH) -> str:
    """A matched pair's text: the one line's, or 'base text -> head text' where the two lines read differently
    (numpy's `matmul(a, b, out=out)` against torch's `mm(a, b, out=out)`, matched in step order)."""
    b, h = code(d.base, width), code(d.head, width)
    if not b or not h or b == h:
        return h or b
    half = (width - 4) // 2
    return f"{code(d.base, half)} -> {code(d.head, half)}"


def hottest(case: CaseLines) -> tuple[list[LineCost], int]:
    """What the terminal shows of a case: its step() lines in source order (of a longer step, the STEP_LINES with
    the most time, with all they call), then its hottest other lines by own time (those with samples of their
    own); and how many step() lines were left out."""
    steps = case.step_lines()
    kept = sorted(steps, key=lambda l: (-l.total.samples, -l.self.samples, l.key))[:STEP_LINES]
    others = [l for l in case.lines if not l.step and l.self.samples][:HOT_LINES]
    return sorted(kept, key=lambda l: l.key) + others, len(steps) - len(kept)


@dataclass
class TermRow:
    case: str  # visible text, a long name over lines
    where: str
    code: str
    self: str
    total: str
    step: bool
    sampled: bool = True  # False: a short step()'s def line, listed without samples (greyed)


def def_line(steps: list[LineCost], record: Sources) -> LineCost | None:
    """The def line of a short step() (kept whole in sources.json, its lines spanning under LISTING_SPAN, as the
    report lists it: listing) where no sample was at it, with its text, to head the step's rows; None otherwise."""
    if not steps:
        return None
    file = steps[0].file
    whole = record.function(file, [l.line for l in steps if l.file == file])
    if whole is None or whole[1] - whole[0] >= LISTING_SPAN or any(l.key == (file, whole[0]) for l in steps):
        return None
    return LineCost(file, whole[0], steps[0].function, steps[0].kind, Figure(0.0, 0.0, 0), Figure(0.0, 0.0, 0),
                    record.text(file, whole[0]) or "", None, True)


def terminal_rows(a: Analysis) -> list[TermRow]:
    """Each sampled case's hottest lines, as hottest() chooses them, and a row saying how many step() lines with
    less time were left out, where some were (the report lists them all); a short step() with all its lines shown
    is headed by its def line, as the report lists it (def_line)."""
    rows = []
    for label, case in a.lines.items():
        lines, left_out = hottest(case)
        # the whole name (cut to 30 characters, two cases' names read alike): a long one folded over lines on its
        # case's first row only, the rows under it its own
        name = fmt.visible(label)
        first, rest = (name, name) if len(name) <= fmt.LABEL_WIDTH else (fmt.folded(name, fmt.LABEL_WIDTH), "")
        ours = [TermRow(rest, where(l.where), code(l), fmt.pm(l.self.us_per_call, l.self.se_us),
                        fmt.pm(l.total.us_per_call, l.total.se_us), l.step) for l in lines]
        head = def_line([l for l in lines if l.step], a.sources.for_case(label)) if not left_out else None
        if head is not None:
            ours.insert(0, TermRow(rest, where(head.where), code(head), "", "", True, sampled=False))
        if left_out:
            # in the line column: a run without the lines' texts has no code column
            ours.insert(len(ours) - sum(not l.step for l in lines), TermRow(
                rest, f"… {left_out} more step() line{'s' if left_out > 1 else ''} with less time "
                "(report.html lists them all)", "", "", "", True))
        if ours:
            ours[0].case = first
        rows += ours
    return rows


# what a line's ± is, in every view's key (terminal, report, diff, the aligned table): the line's figure is its share
# of the samples times the case's time per call, and the ± is the share's sampling error alone (attribution.Profile.se)
# -- a line in every sample of the step (a workload's one fn line) read '119.44 ± 0.00', as if its time were exact
LINE_SE = fmt.share_se("line")

TERMINAL_TITLE = "source lines, us per call: each case's step() lines, then its hottest"
TERMINAL_KEY = ("self: the line's own code; total: with all it calls; " + LINE_SE + "; a generated C/C++ line shows the .pyx line it came from where known, a line whose file "
                "was not found shows file:line alone (docs/lines.md)")
DEF_KEY = "; a short step() is headed by its def line, blank where it has no samples"


@dataclass
class DeltaRow:
    where: str
    code: str
    base_self: str
    head_self: str
    diff_self: str
    diff_total: str
    matched: str


def shown(d: LineDelta, which: str) -> float:
    """head - base of a line's self or total figure as each side's line table shows it (a side without the
    line: 0), as every difference column is (fmt.shown_delta)."""
    def side(l: LineCost | None) -> float:
        return getattr(l, which).us_per_call if l is not None else 0.0

    return fmt.shown_delta(side(d.base), side(d.head))


def delta_rows(deltas: list[LineDelta], top: int = DIFF_LINES) -> list[DeltaRow]:
    """The `top` lines that differ most (diff_lines' order), as strings."""
    def us_of(l: LineCost | None) -> str:
        return fmt.num(l.self.us_per_call) if l is not None else fmt.DASH

    return [DeltaRow(delta_where(d), delta_code(d), us_of(d.base), us_of(d.head),
                     fmt.pm(shown(d, "self"), d.self_se, sign=True), fmt.pm(shown(d, "total"), d.total_se, sign=True),
                     d.matched_by or d.one_side)
            for d in changed(deltas)[:top]]


def changed(deltas: list[LineDelta]) -> list[LineDelta]:
    """The lines whose difference shows: a line at '+0.00 ± 0.00 us of its own time (total +0.00 ± 0.00)' was
    listed among those that differ most (its difference under half a hundredth of a us). Judged on the difference
    the rows show (`shown`, of the two sides' rounded figures), which can be 0.01 from the rounded difference."""
    return [d for d in deltas if round(shown(d, "self"), 2) or round(shown(d, "total"), 2)]


def delta_sentence(d: LineDelta, text: Callable[[str], str] = str) -> str:
    """One line of a summary: 'case.py:21 `y = a * 2.0` +19.80 ± 0.41 us of its own time (total +19.90 ± 0.41)'.
    `text`: how its words are written (a Markdown summary escapes them); the code spans are written as they are."""
    # both texts where the two lines read differently (matched in step order: `matmul(...)` -> `mm(...)`)
    quoted = text(" -> ").join(fmt.code_span(t) for t in dict.fromkeys((code(d.base), code(d.head))) if t)
    own, total = fmt.pm(shown(d, 'self'), d.self_se, sign=True), fmt.pm(shown(d, 'total'), d.total_se, sign=True)
    # a line of one side only in a function both ran (LineDelta.added) is ranked by its total: the sentence leads
    # with it, saying whether the other side has the line unsampled or not at all (LineDelta.one_side)
    figures = (f" {d.one_side}: {total} us with all it calls ({own} of its own)"
               if d.added else f" {own} us of its own time (total {total})")
    return text(delta_where(d)) + (f" {quoted}" if quoted else "") + text(figures)


def pair_sentences(a: Analysis, keep: Callable[[str, str], bool] = lambda base, head: True,
                   top: int = SUMMARY_LINES) -> list[tuple[str, list[str]]]:
    """Each pair (base, head) that `keep` takes and whose lines differ: ('head − base', the lines that differ
    most, one sentence each)."""
    out = []
    for p in a.pairs:
        deltas = a.pair_lines.get((p.base, p.head))
        if keep(p.base, p.head) and deltas and changed(deltas):
            out.append((f"{p.head} − {p.base}", [delta_sentence(d) for d in changed(deltas)[:top]]))
    return out


DELTA_KEY = ("self: the line's own code; total: with all it calls; diff: {head} minus {base}, " + LINE_SE
             + "; lines matched by file and line (the same text), else by function and "
             "text, else the step()'s lines in source order")


def line_json(l: LineCost | None) -> dict[str, Any] | None:
    if l is None:
        return None
    return {"file": l.file, "line": l.line, "function": l.function, "kind": l.kind, "step": l.step, "text": l.text,
            "pyx": None if l.pyx is None else {"file": l.pyx.file, "line": l.pyx.line, "text": l.pyx.text},
            "self_us": l.self.us_per_call, "self_se_us": l.self.se_us, "self_samples": l.self.samples,
            "total_us": l.total.us_per_call, "total_se_us": l.total.se_us, "total_samples": l.total.samples}


def deltas_json(deltas: list[LineDelta]) -> list[dict[str, Any]]:
    """A pair's lines for the JSON summary: the JSON_LINES that differ most, and every step() line besides."""
    keep = [d for i, d in enumerate(deltas) if i < JSON_LINES or any(l is not None and l.step for l in (d.base, d.head))]
    return [{"where": d.where, "matched_by": d.matched_by or None,
             "not_sampled_in": ("base" if d.base is None else "head") if d.unsampled else None,
             "base": line_json(d.base), "head": line_json(d.head),
             "delta_us": d.self_delta, "delta_se_us": d.self_se, "delta_total_us": d.total_delta,
             "delta_total_se_us": d.total_se} for d in keep]


# --- the report's listings ----------------------------------------------------------------------------------

@dataclass
class ListingRow:
    line: str  # its number, or '⋮' for lines left out
    text: str
    sampled: bool
    self: str
    total: str
    self_pct: float  # the bars: of the case's time per call
    total_pct: float
    pyx: str = ""  # a generated C/C++ line: the .pyx line it came from, with its text


@dataclass
class Listing:
    title: str  # the function
    file: str
    rows: list[ListingRow]


@dataclass
class CaseListings:
    label: str
    us_per_call: str
    listings: list[Listing]


@dataclass
class PairLines:
    title: str
    base: str
    head: str
    rows: list[DeltaRow]
    key: str


@dataclass
class LinesSection:
    cases: list[CaseListings]
    pairs: list[PairLines] = field(default_factory=list)
    note: str = ""
    # whether any line has its text: a run recorded before lines were kept has none, and its tables then have no
    # code column (as the terminal's), the note saying why, rather than a column empty on every row
    texts: bool = True


LISTING_NOTE = ("Host time per call by source line, from the same samples as the frames: self, the line's own code; "
                "total, with all it calls; " + LINE_SE + "; the bars are shares of the case's time per call (dark: self). Lines "
                "without samples are grey. A line's text is as the measuring host had it (kept in sources.json); "
                "a generated C/C++ line shows the .pyx line it came from where the generated source was found "
                "(beside the module, or under --source). See docs/lines.md for where lines come from and their "
                "limits.")


NO_TEXTS = ("This run kept no line's text (it was recorded before flametool kept them in sources.json): each "
            "line shows as file:line alone.")


def _pct(value: float, whole: float) -> float:
    return round(max(0.0, min(100.0, 100 * value / whole)), 1) if whole > 0 else 0.0


def listing(lines: list[LineCost], record: Sources, case_us: float, title: str) -> Listing:
    """One function's lines in source order: of a short function kept whole (the case's step(), run/sources.py
    functions), every line from its `def` to its last; else every line from its first sampled one to its last
    where they span at most LISTING_SPAN (the lines without samples greyed, with their text where it was
    kept), else the sampled ones with '⋮' where lines are left out."""
    by_line = {l.line: l for l in lines}
    file = lines[0].file
    first, last = min(by_line), max(by_line)
    # bounded here too: sources.json may be written by hand
    whole = record.function(file, by_line)
    if whole is not None and whole[1] - whole[0] < LISTING_SPAN:
        first, last = whole
    numbers = list(range(first, last + 1)) if last - first < LISTING_SPAN else sorted(by_line)
    rows: list[ListingRow] = []
    for i, n in enumerate(numbers):
        if i and n != numbers[i - 1] + 1:
            rows.append(ListingRow("⋮", "", False, "", "", 0.0, 0.0))
        l = by_line.get(n)
        if l is None:
            text = record.text(file, n)
            rows.append(ListingRow(str(n), short(text.rstrip(), 120) if text else "", False, "", "", 0.0, 0.0))
            continue
        pyx = code(l, 120) if l.pyx is not None else ""
        rows.append(ListingRow(str(n), short(l.text.rstrip(), 120) if l.text else "", True,
                               fmt.pm(l.self.us_per_call, l.self.se_us), fmt.pm(l.total.us_per_call, l.total.se_us),
                               _pct(l.self.us_per_call, case_us), _pct(l.total.us_per_call, case_us), pyx))
    return Listing(short(title, 120), where(file, 120), rows)


def case_listings(case: CaseLines, record: Sources) -> CaseListings:
    """A case's step() listed, then its LISTED_FUNCTIONS hottest functions (by their lines' own time)."""
    record = record.for_case(case.label)
    groups: dict[tuple[str, str], list[LineCost]] = {}
    for l in case.lines:
        groups.setdefault((l.function, l.file), []).append(l)
    step = [g for g in groups.values() if g[0].step]
    rest = sorted((g for g in groups.values() if not g[0].step and any(l.self.samples for l in g)),
                  key=lambda g: (-sum(l.self.samples for l in g), g[0].function, g[0].file))
    listed = [listing(g, record, case.us_per_call, f"{g[0].function} (the case's step())") for g in step]
    listed += [listing(g, record, case.us_per_call, g[0].function) for g in rest[:LISTED_FUNCTIONS]]
    return CaseListings(short(case.label, 80), fmt.us(case.us_per_call), listed)


def section(a: Analysis) -> LinesSection | None:
    """The report's section of lines; None for a run with no sampled line (the page is as it was)."""
    cases = [case_listings(c, a.sources) for c in a.lines.values() if c.lines]
    if not cases:
        return None
    pairs = [PairLines(short(f"{head} − {base}", 80), short(base, 40), short(head, 40), delta_rows(d, 15),
                       DELTA_KEY.format(head=fmt.visible(head), base=fmt.visible(base)))
             for (base, head), d in a.pair_lines.items() if changed(d)]
    texts = any(r.text or r.pyx for c in cases for l in c.listings for r in l.rows) or any(
        r.code for p in pairs for r in p.rows)
    return LinesSection(cases, pairs, LISTING_NOTE if texts else f"{LISTING_NOTE} {NO_TEXTS}", texts)
