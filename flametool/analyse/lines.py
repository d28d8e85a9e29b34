"""Host time per call per source line (issue 39): of the case's step(), of a library's Python, of its Cython
(.pyx where mapped) and of native C/C++ lines; and the lines of two cases, runs or builds side by side.

A line's figures are made as attribution makes a frame's, from the same stacks read the same way (a Profile
read with by_line=True: one frame per function and line) and the same scale (Profile.us, Profile.se):
  self   samples whose leaf frame is at the line (the line's own code, not what it calls)
  total  samples with the line anywhere in their stack, once per sample however often it recurs there
each as microseconds per call with the binomial standard error of its share. The line's text, where its file
was found on the measuring host, and the .pyx line a generated C/C++ line came from are read from the run's
record of line texts (run/sources.py), never from source files. The case's step() is the root frame of its
stacks (as the frame diff aligns them); every frame of that function and file is one of the "step lines",
one per op of a multi-op step.

Wiring it in (a later phase; nothing below is called yet):
  measure: where profiling.py writes a case's <label>.folded, take `measure.sources.locations(kept stacks)` and
    `measure.sources.collect(wanted, Roots(case_file, child's sys.path, config.source_roots))`; the child's
    sys.path has to come back with its ready/profile message (measure/protocol.py; `[p for p in sys.path if p]`
    after the case is imported). Merge the cases' records (`run.sources.merge`) and `run.sources.save(run_dir,
    record)` once the profiling phase ends (beside run.json; written atomically). `--source DIR` (repeatable,
    commands/options.py, action="append") is checked by `measure.sources.check_source_roots` in
    commands/settings.py, and the roots go into measure/config.Config.
  analyse: per sampled case `case_lines(attribution.load_profile(run_dir, run, label, by_line=True),
    run.sources.load(run_dir))`; per pair (and diff's run-vs-run) `diff_lines(base, head)`. One line-level
    profile per case, kept beside the function-level one (reading twice costs what analysis.stacks' by_line does).
  render: the terminal's hottest lines (LineCost.where, .text shortened, self and total); the report's listing
    of step_lines() and of the hottest functions' lines; summary JSON's lines; export --lines is the existing
    by_line export. Texts are clean of control characters already; each renderer escapes its own markup.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from typing import Callable, Iterable

from . import naming
from .attribution import Figure, Profile
from ..run import sources as rec
from ..run.sources import same_file

PYTHON, CYTHON, NATIVE = "python", "cython", "native"
Key = tuple[str, int]  # (file as the frames name it, line)


@dataclass(frozen=True)
class LineCost:
    file: str
    line: int
    function: str  # the normalized name of the function the line is in (the first frame seen at it)
    kind: str  # PYTHON (.py), CYTHON (.pyx, or generated C/C++ mapped to a .pyx line), NATIVE
    self: Figure
    total: Figure
    text: str | None  # None: the file was not found where it was measured (shown as file:line alone)
    pyx: rec.PyxLine | None  # the .pyx line a generated C/C++ line came from
    step: bool  # a line of the case's own step()
    origin: str | None = None  # where the file was read (rec.ORIGINS), None: not found

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"

    @property
    def key(self) -> Key:
        return self.file, self.line


@dataclass(frozen=True)
class CaseLines:
    label: str
    us_per_call: float
    samples: int  # the denominator of every share
    lines: list[LineCost]  # every line, by self time, largest first
    # the line texts as this case read its files (run/sources.py, Sources.for_case): diff_lines asks it whether
    # a line sampled on the other side only is in this case's copy of the file too (one_side)
    record: rec.Sources = field(default_factory=rec.Sources, compare=False, repr=False)

    def step_lines(self) -> list[LineCost]:
        """The step()'s own lines, in source order."""
        return sorted((l for l in self.lines if l.step), key=lambda l: l.key)


def _needs_lines(profile: Profile) -> None:
    for key, f in profile.frames.items():
        if f.line is not None and f.kind != "address" and key != naming.with_line(f):
            raise ValueError(f"{profile.label}: a profile keyed by function, not by line (read it with by_line=True)")


def step_functions(profile: Profile, step_source: str | None = None) -> set[tuple[str, str]]:
    """(name, file) of the case's step(): each stack's root frame, past an unnamed address py-spy now and then
    puts above it, when that frame is Python (a native step, step = np.matmul, has no line of its own).

    `step_source`: a workload's file (cases.own_file: its path, or its module's as a path): flametool's own step() only calls
    the workload's fn, so the step is the first frame of that file (fn, the same lines in every library's case);
    a stack without one (jitted JAX: its dispatch runs, not fn's lines) has no step line."""
    out: set[tuple[str, str]] = set()
    source = step_source.replace("\\", "/") if step_source else None
    for s in profile.stacks:
        frames = [profile.frames[k] for k in s.frames if profile.frames[k].kind != "address"]
        if source is not None:
            root = next((f for f in frames if f.kind == "python" and f.file and f.line is not None
                         and same_file(source, f.file)), None)
        else:
            root = frames[0] if frames else None
        if root is not None and root.kind == "python" and root.line is not None:
            out.add((root.name, root.file))
    return out


def case_lines(profile: Profile, record: rec.Sources = rec.Sources(), fold_pyx: bool = False,
               step_source: str | None = None) -> CaseLines:
    """The case's figures per source line (see the module's docstring). `fold_pyx`: a generated C/C++ line
    mapped to a .pyx line counts as that .pyx line, so the lines of one .pyx line are one row (a sample
    through several of them still counts once in its total)."""
    _needs_lines(profile)
    record = record.for_case(profile.label)  # its own copy of a file another --env build has too
    steps = step_functions(profile, step_source)
    line_of: dict[str, Key | None] = {}
    about: dict[Key, tuple[str, str, bool, rec.PyxLine | None]] = {}  # function, kind, step, pyx
    # the line each frame names (none for an address or the loop), and the record's texts of them all, at once
    named: dict[str, Key] = {name: (f.file, f.line) for name, f in profile.frames.items()
                             if f.line is not None and f.file and f.kind not in ("address", "loop")}
    known = record.look_up(set(named.values()))
    for name, f in profile.frames.items():
        if name not in named:
            line_of[name] = None
            continue
        key: Key = named[name]
        pyx = known[key].pyx
        kind = CYTHON if pyx is not None or f.file.endswith(".pyx") else PYTHON if f.kind == "python" else NATIVE
        if fold_pyx and pyx is not None:
            key, pyx = (pyx.file, pyx.line), None
        line_of[name] = key
        if key not in about:  # frames are in first-seen order: the first frame at a line names its function
            about[key] = (f.name, kind, (f.name, f.file) in steps, pyx)
    self_n: dict[Key, int] = {}
    total_n: dict[Key, int] = {}
    for s in profile.stacks:
        leaf = line_of.get(s.frames[-1]) if s.frames else None
        if leaf is not None:
            self_n[leaf] = self_n.get(leaf, 0) + s.count
        for key in {k for k in map(line_of.__getitem__, s.frames) if k is not None}:
            total_n[key] = total_n.get(key, 0) + s.count

    if fold_pyx:  # the .pyx lines the generated ones count as
        known |= record.look_up(k for k in total_n if k not in known)

    def fig(n: int) -> Figure:
        return Figure(profile.us(n), profile.se(n), n)

    lines = [LineCost(file, line, function, kind, fig(self_n.get((file, line), 0)), fig(n),
                      known[(file, line)].text, pyx, step, known[(file, line)].origin)
             for (file, line), n in total_n.items()
             for function, kind, step, pyx in [about[(file, line)]]]
    lines.sort(key=lambda l: (-l.self.samples, -l.total.samples, l.key))
    return CaseLines(profile.label, profile.us_per_call, profile.denominator, lines, record)


# --- two cases, runs or builds -------------------------------------------------------------------------

BY_FILE_LINE, BY_STEP_ORDER, BY_FUNCTION_TEXT = "file and line", "step order", "function and text"


@dataclass(frozen=True)
class LineDelta:
    """One line on both sides (or one), head - base per call, with the standard error of the difference."""

    base: LineCost | None
    head: LineCost | None
    matched_by: str  # BY_FILE_LINE, BY_STEP_ORDER, BY_FUNCTION_TEXT; '' where the line is on one side only
    self_delta: float
    self_se: float
    total_delta: float
    total_se: float
    # a line one side runs in a function both sides run (a check one build added to it): what it adds is its
    # total, everything it calls being its, so it is ranked by that (diff_lines)
    added: bool = False
    # a line of one side only that the other side has too, without a sample there (on_both_sides): numpy's
    # _methods.py:79 caught in one run of numpy and not in the other is not a line only that run runs
    unsampled: bool = False
    # the line number where the other side has it, unsampled, where that side's build moved it (B's `mean =
    # x.mean()` at 29, A's at 27 with no sample there); None: at this line's own number, or not known there
    unsampled_at: int | None = None
    # a line of one side only in a function both ran, where nothing says whether the other side has it: the
    # other's copy of the file holds no text at it nor the same text elsewhere in the function (a library's
    # file is kept only near its sampled lines) and is not this side's copy (another path: another build), or
    # holds another statement at it in a function not kept whole (the text may be at a line of it not kept)
    unknown: bool = False

    @property
    def one_side(self) -> str:
        """How a line of one side only is labelled: 'not sampled in base' where the base has the line too
        (unsampled, at its own number or where the base's build moved it), 'unknown in base' where nothing says
        whether it has, 'head only' where it has not; '' for a matched line."""
        if self.base is not None and self.head is not None:
            return ""
        missing = "base" if self.base is None else "head"
        if self.unsampled or self.unknown:
            return f"{'not sampled' if self.unsampled else 'unknown'} in {missing}"
        return f"{'head' if missing == 'base' else 'base'} only"

    @property
    def where(self) -> str:
        """'file:line', or 'base file:line -> head file:line' where the two differ (a line of one side only
        that the other side has unsampled at another number names that number on its side)."""
        line = self.base or self.head
        assert line is not None
        moved = f"{line.file}:{self.unsampled_at}" if self.unsampled_at is not None else None
        ends = [e for e in (self.base.where if self.base else moved, self.head.where if self.head else moved) if e]
        return ends[0] if len(set(ends)) == 1 else " -> ".join(ends)


def _delta(base: LineCost | None, head: LineCost | None, how: str) -> LineDelta:
    def part(l: LineCost | None, which: str) -> Figure:
        return getattr(l, which) if l is not None else Figure(0.0, 0.0, 0)

    sb, sh, tb, th = part(base, "self"), part(head, "self"), part(base, "total"), part(head, "total")
    return LineDelta(base, head, how, sh.us_per_call - sb.us_per_call, math.hypot(sb.se_us, sh.se_us),
                     th.us_per_call - tb.us_per_call, math.hypot(tb.se_us, th.se_us))


def _pair_groups(base: Iterable[LineCost], head: Iterable[LineCost],
                 key: Callable[[LineCost], tuple[str, str] | None]) -> list[tuple[LineCost, LineCost]]:
    """Lines of the two sides with equal keys (key(line), None: not matched this way), each group paired in
    source order when both sides have as many of it; a group of unequal sizes is ambiguous and left."""
    def groups(lines: Iterable[LineCost]) -> dict[tuple[str, str], list[LineCost]]:
        out: dict[tuple[str, str], list[LineCost]] = {}
        for l in sorted(lines, key=lambda l: l.key):
            k = key(l)
            if k is not None:
                out.setdefault(k, []).append(l)
        return out

    gb, gh = groups(base), groups(head)
    return [pair for k, ls in gb.items() if len(ls) == len(gh.get(k, [])) for pair in zip(ls, gh[k])]


def _texts_differ(a: LineCost, b: LineCost) -> bool:
    return a.text is not None and b.text is not None and a.text.strip() != b.text.strip()


def _header(l: LineCost) -> bool:
    """A function's `def` line with no statement on it (its text known): `def step():`, or the first line of a
    signature that goes on; not `def step(): return f(a)`, whose one line is its op."""
    if l.text is None or not l.text.lstrip().startswith(("def ", "async def ")):
        return False
    code = re.sub(r"#[^'\"]*$", "", l.text).rstrip()  # a comment at its end
    return code.endswith((":", ",", "("))


def _unmatched_steps(left: Iterable[LineCost], other: CaseLines, others_left: dict[Key, LineCost]) -> list[LineCost]:
    """The step lines of one side left unmatched that may be matched in step order with the other side's: every
    one where the other's step is another function, else those whose file:line the other side has unmatched too
    (edited in place: the same line, other text; not a line whose number the other side's edit moved)."""
    steps = {(l.function, l.file) for l in other.lines if l.step}
    return [l for l in left if l.step and ((l.function, l.file) not in steps or l.key in others_left)]


@dataclass(frozen=True)
class OtherSide:
    """What the other side's own copy of its file says of a line sampled on one side only (on_both_sides)."""

    has: bool | None  # True: it has the line, unsampled; False: it has not; None: nothing says
    at: int | None = None  # where it has it at another number (its build moved the line)


@dataclass
class SideIndex:
    """One side's lines looked up, made once per diff_lines (on_both_sides asks of every line the other side
    left unmatched: scanning that side's lines and its file's text for each was quadratic, 5.7 s for 4,000 lines
    a side where 0.05 s had done): the files it ran, its lines by (function, file), its sampled lines by file, and
    a file's lines by their text (made as a file is first asked of)."""

    side: CaseLines
    files: set[str] = field(init=False)
    by_function: dict[tuple[str, str], list[int]] = field(init=False)
    sampled: dict[str, set[int]] = field(init=False)
    _texts: dict[str, dict[str, list[int]]] = field(init=False, default_factory=dict)
    _one_copy: dict[str, bool] = field(init=False, default_factory=dict)  # file -> one copy with the other side's

    def __post_init__(self) -> None:
        self.files, self.by_function, self.sampled = set(), {}, {}
        for l in self.side.lines:
            self.files.add(l.file)
            self.by_function.setdefault((l.function, l.file), []).append(l.line)
            self.sampled.setdefault(l.file, set()).add(l.line)
        for lines in self.by_function.values():
            lines.sort()

    def lines_reading(self, file: str, text: str) -> list[int]:
        """The lines of this side's copy of `file` whose text is `text` (stripped), in order."""
        if file not in self._texts:
            found = self.side.record.files.get(file)
            by_text: dict[str, list[int]] = {}
            for n, t in sorted(found.lines.items()) if found is not None else ():
                by_text.setdefault(t.strip(), []).append(n)
            self._texts[file] = by_text
        return self._texts[file].get(text.strip(), [])


def on_both_sides(line: LineCost, mine: CaseLines, other: CaseLines, functions: set[tuple[str, str]],
                  index: SideIndex | None = None, one_case: bool = False) -> OtherSide:
    """Whether a line of `mine` sampled there only is a line the `other` side has too (only not sampled there).
    It has: where it ran the file and its own copy holds the same text at that line, or, in a function both
    ran, at another line of that function, one it did not sample (its build moved the line: B's check above A's
    `mean = x.mean()` moved it from 27 to 29); or where the line is in a function both ran, its text unknown
    in the other's copy, and that copy is this side's (the file read from one path, no line of it reading
    otherwise: two runs of one numpy's _methods.py). It has not: a line of a file or function the other side
    never ran, where the other side is another case (numpy's _methods.py beside torch, in one run whose record
    holds the file for both; `one_case`, the same case in two runs or builds, `flametool diff A B`: there a
    function one run caught and the other never did, numpy's rarely run `_sum`, has the line where that run's
    copy of the file is this one's, else nothing says: a file that run never read, or read from another path),
    or where its copy holds another statement there and the text nowhere else in the function, that function
    kept whole (B's check added at line 27 of a case file's standardize, where A's line 27 is `mean =
    x.mean()`). Else nothing
    says (has None): the text unknown at the line in another copy (a library's file is kept only near its
    sampled lines, so code B added past A's last sampled line is not known to be new), or in no copy (a run
    recorded before sources.json), or another statement there in a function not kept whole (a library's: the
    line may be one of its lines not kept, where an edit above it moved it)."""
    index = index if index is not None else SideIndex(other)
    ran_file = line.file in index.files
    # one case's other run has the file as its record holds it, sampled by this case there or not (the record is
    # that run's, its files read from the install the case ran); another case, only where it ran the file (one
    # run's record holds numpy's files for its torch case too)
    theirs = other.record.text(line.file, line.line) if ran_file or one_case else None
    if theirs is not None and line.text is not None and theirs.strip() == line.text.strip():
        return OtherSide(True)
    both_ran = (line.function, line.file) in functions
    if not both_ran and not one_case:
        return OtherSide(False)
    moved = _moved_to(line, index) if both_ran and line.text is not None and line.text.strip() else []
    if moved:  # the same statement elsewhere in the function: one place is that line, several none surely
        return OtherSide(True, moved[0] if len(moved) == 1 else None)
    if theirs is not None and line.text is not None:
        if not both_ran:  # one case, a function its other run never ran, its copy another at the line
            return OtherSide(None)
        # another statement at the line, and this one nowhere in the function: proven only where the other's
        # function is kept whole (every line of it known); a library's file is kept only near its sampled lines,
        # so the text may be at a line of it that was not kept (a line added above moved it there)
        ran = index.by_function.get((line.function, line.file), [])
        return OtherSide(False if other.record.function(line.file, ran) is not None else None)
    if line.file not in index._one_copy:
        index._one_copy[line.file] = _one_copy(line.file, mine.record, other.record)
    return OtherSide(True if index._one_copy[line.file] else None)


def _moved_to(line: LineCost, other: SideIndex) -> list[int]:
    """The lines of the other side's copy of the file, inside the function `line` is in as that side ran it
    (the function kept whole, else its sampled lines' first to last), that hold `line`'s text without a sample."""
    ran = other.by_function.get((line.function, line.file))
    if line.file not in other.side.record.files or not ran:
        return []
    first, last = other.side.record.function(line.file, ran) or (ran[0], ran[-1])
    sampled = other.sampled.get(line.file, set())
    assert line.text is not None
    return [n for n in other.lines_reading(line.file, line.text) if first <= n <= last and n not in sampled]


def _one_copy(file: str, mine: rec.Sources, theirs: rec.Sources) -> bool:
    """Whether the two sides read `file` from one copy: one path, and no line both hold reads otherwise."""
    a, b = mine.files.get(file), theirs.files.get(file)
    return (a is not None and b is not None and a.path == b.path
            and all(b.lines[n] == t for n, t in a.lines.items() if n in b.lines))


def diff_lines(base: CaseLines, head: CaseLines, by: str = "self", one_case: bool = False) -> list[LineDelta]:
    """The lines of two cases matched, head - base, by |difference| in `by` ('self' or 'total'), largest first.

    Matching, in this order: the same file and line, where the line's text is the same on both sides or unknown
    on one (two builds of a library running the same files; a workload's step run on two libraries, whose step
    lines are the same lines of one file); the same function and line text (a file edited between two runs, its
    lines moved); the step()'s own lines left in source order, where the two steps have as many of them (cupy's
    four ops against torch's four; a line of one step edited in place), the steps' `def` lines (the samples
    taken as the call enters) apart from their ops; where both steps are one function (a workload's fn), only
    its lines edited in place, as a line sampled on one side alone is that line, unsampled on the other. A line
    left over is shown on its own side, against nothing: not sampled on the other where that side has it too
    (on_both_sides), else that side's alone. `one_case`: the two sides are one case in two runs (diff's
    run against run), not two cases, so a function only one side ran is not for that that side's alone."""
    if by not in ("self", "total"):
        raise ValueError(f"by: 'self' or 'total', not {by!r}")
    left = {l.key: l for l in base.lines}
    right = {l.key: l for l in head.lines}
    # a file:line whose text differs is another statement there (a line added above it moved it), not this one
    out = [_delta(left.pop(k), right.pop(k), BY_FILE_LINE) for k in [k for k in left if k in right]
           if not _texts_differ(left[k], right[k])]

    def function_text(l: LineCost) -> tuple[str, str] | None:
        return (l.function, l.text.strip()) if l.text and l.text.strip() else None

    for b, h in _pair_groups(left.values(), right.values(), function_text):
        out.append(_delta(left.pop(b.key), right.pop(h.key), BY_FUNCTION_TEXT))
    # one step function on both sides (a workload's fn on two libraries, a case in two builds) has the same
    # lines on both: a line sampled on one side only is that line unsampled on the other, not another line of
    # it, so only a line edited in place (its file:line on both, the text differing) is left to match in order
    steps_b = _unmatched_steps(left.values(), head, right)
    steps_h = _unmatched_steps(right.values(), base, left)
    # a step's `def` line holds only the few samples taken as the call enters it, on one side and not the
    # other as often as not: the ops are matched without it, and two def lines with each other
    defs_b, defs_h = [l for l in steps_b if _header(l)], [l for l in steps_h if _header(l)]
    if len(defs_b) == len(defs_h) == 1:
        out.append(_delta(left.pop(defs_b[0].key), right.pop(defs_h[0].key), BY_STEP_ORDER))
    steps_b, steps_h = [l for l in steps_b if not _header(l)], [l for l in steps_h if not _header(l)]
    if steps_b and len(steps_b) == len(steps_h):
        for b, h in zip(sorted(steps_b, key=lambda l: l.key), sorted(steps_h, key=lambda l: l.key)):
            out.append(_delta(left.pop(b.key), right.pop(h.key), BY_STEP_ORDER))
    # a line left on one side in a function the other side ran too is code that side runs and the other does not
    # (B's new `if not np.isfinite(x).all():` in mylib's standardize): its own time is the few samples in its
    # bytecode, the rest is in the calls it makes (1.9 us of its 2.0 here), so by its own time it ranked below
    # lines differing by noise (+0.4 us of numpy's), not among the 50 a JSON summary lists; ranked by its total it
    # leads. Not a line of a function one side alone runs (cupy's step beside torch's: its total is the case's)
    functions = {(l.function, l.file) for l in base.lines} & {(l.function, l.file) for l in head.lines}
    for mine, other, lines in ((base, head, left), (head, base, right)):
        index = SideIndex(other)
        for l in lines.values():
            said = on_both_sides(l, mine, other, functions, index, one_case)
            out.append(replace(_delta(l, None, "") if mine is base else _delta(None, l, ""),
                               added=(l.function, l.file) in functions, unsampled=said.has is True,
                               unsampled_at=said.at, unknown=said.has is None))
    first, second = ("self_delta", "total_delta") if by == "self" else ("total_delta", "self_delta")
    out.sort(key=lambda d: (-abs(d.total_delta if d.added else getattr(d, first)), -abs(getattr(d, second)), d.where))
    return out
