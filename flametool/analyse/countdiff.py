"""Structural differences, exact: what the head does per step() call that the base does not, and the reverse,
from the two sides' counted loops (counts.Counts). A count is exact (a Fraction), so a difference is too, said in
words (line()): 'torch makes 1 call of torch.mm per step; numpy makes none of it', 'both make 1 launch of kernel
nvjet_... per step'. Every view lists them right under the pair's headline, before the layers and frames: they
need no interval.

Per line of step() (``Counts.by_line``): each line's counts on both sides, head - base, the lines matched by
file and line where their text is the same (two builds or runs of one case file), else by their text where the
file was edited between the two (its lines moved), else, where the two steps are in different files (cupy's
case against torch's), by their order in the step, as analyse/lines.diff_lines matches sampled step lines.

Host allocations (tracemalloc) are not structural: they are listed but never make two sides differ here (blocks
kept per step read -1/64 in one run and 0 in the next on the H200: the interpreter's own bookkeeping).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Iterable

from . import cxxnames
from ..run import counts  # the kinds' table, read when used (a test adds a kind to it)
from ..run.counts import OUTSIDE, Counts, LineCounts, Tally, count_words, fraction_text


@dataclass(frozen=True)
class CountDelta:
    """One thing done per step on either side: its count on each (None: that side did not count this kind),
    head - base (None where a side did not count it), and bytes where it moves or holds memory."""

    kind: str
    name: str
    base: Fraction | None
    head: Fraction | None
    base_bytes: Fraction | None = None
    head_bytes: Fraction | None = None

    @property
    def delta(self) -> Fraction | None:
        if self.base is None or self.head is None:
            return None
        return self.head - self.base

    @property
    def changed(self) -> bool:
        d = self.delta
        return d is not None and d != 0


@dataclass(frozen=True)
class LineCountDelta:
    """One line of step() on both sides (or one: None on the other), its counts by kind on each, matched by
    `matched_by` (BY_FILE_LINE, BY_FUNCTION_TEXT: a line of one step() that moved, BY_STEP_ORDER, '' for a line
    of one side only)."""

    base: LineCounts | None
    head: LineCounts | None
    matched_by: str
    kinds: tuple[str, ...]  # the kinds both sides placed on lines

    def delta(self, kind: str) -> Fraction:
        def of(l: LineCounts | None) -> Fraction:
            return l.counts.get(kind, Fraction(0)) if l is not None else Fraction(0)

        return of(self.head) - of(self.base)

    @property
    def changed(self) -> bool:
        return any(self.delta(k) != 0 for k in self.kinds if counts.KINDS[k].structural)

    @property
    def where(self) -> str:
        ends = [l.where for l in (self.base, self.head) if l is not None]
        return ends[0] if len(set(ends)) == 1 else " -> ".join(ends)


BY_FILE_LINE, BY_STEP_ORDER, BY_FUNCTION_TEXT = "file and line", "step order", "function and text"


def _texts_differ(a: LineCounts, b: LineCounts) -> bool:
    return a.text is not None and b.text is not None and a.text.strip() != b.text.strip()


def _by_text(lines: Iterable[LineCounts]) -> dict[tuple[str, str], list[tuple[str, int]]]:
    """(file, text) -> the lines of that file with that text (known, not blank)."""
    out: dict[tuple[str, str], list[tuple[str, int]]] = {}
    for l in lines:
        if l.file != OUTSIDE and l.text and l.text.strip():
            out.setdefault((l.file, l.text.strip()), []).append((l.file, l.line))
    return out


def diff_by_line(base: Counts, head: Counts) -> list[LineCountDelta]:
    """The two sides' lines matched (see the module's note), in the head's (else the base's) source order;
    [] where a side has no per-line counts, or where no line of one step matches a line of the other."""
    if not base.by_line or not head.by_line:
        return []
    kinds = tuple(k for k in counts.KINDS if k in base.by_line_kinds and k in head.by_line_kinds)
    left = {(l.file, l.line): l for l in base.by_line}
    right = {(l.file, l.line): l for l in head.by_line}
    # a file:line whose text differs is another statement there (a line added above it moved it), not this one
    edited = [k for k in right if k in left and _texts_differ(left[k], right[k])]
    pairs: list[tuple[LineCounts | None, LineCounts | None, str]] = [
        (left.pop(k), right.pop(k), BY_FILE_LINE if k[0] != OUTSIDE else "") for k in [k for k in right if k in left]
        if k not in edited]
    if edited:
        # the file was edited between the two (the per-line record names no function, so only then: two steps
        # of one file that share no line, numpy's and torch's, both begin with the same `def step()` text):
        # its lines that moved, each text once on each side
        by_text_b, by_text_h = _by_text(left.values()), _by_text(right.values())
        for key in [k for k in by_text_h if k in by_text_b]:
            if len(by_text_b[key]) == len(by_text_h[key]) == 1:
                pairs.append((left.pop(by_text_b[key][0]), right.pop(by_text_h[key][0]), BY_FUNCTION_TEXT))
    if left and right and {f for f, _ in left} != {f for f, _ in right} and len(left) == len(right):
        pairs += [(b, h, BY_STEP_ORDER) for b, h in zip(sorted(left.values(), key=lambda l: l.line),
                                                        sorted(right.values(), key=lambda l: l.line))]
        left, right = {}, {}
    if not any(how for _, _, how in pairs):
        # two steps that share no line (numpy's and torch's built-in steps, two functions of one file): their
        # lines are not one step's lines compared, and a line of one beside nothing of the other says nothing
        return []
    pairs += [(None, h, "") for h in right.values()] + [(b, None, "") for b in left.values()]

    def order(p: tuple[LineCounts | None, LineCounts | None, str]) -> tuple[bool, int, int]:
        b, h, _ = p
        first = h if h is not None else b
        assert first is not None
        return first.file == OUTSIDE, 0 if h is not None else 1, first.line

    return [LineCountDelta(b, h, how, kinds) for b, h, how in sorted(pairs, key=order)]


def line_words(d: LineCountDelta) -> str:
    """'line case.py:19 (y = a @ b): +1 kernel, +12 CUDA API calls'; a line the same on both: '... the same'."""
    parts = [f"{count_words(d.delta(k), sign=True)} "
             f"{singular(counts.KINDS[k].title) if abs(d.delta(k)) == 1 else counts.KINDS[k].title}" for k in d.kinds
             if counts.KINDS[k].structural and d.delta(k) != 0]
    text = next((l.text for l in (d.head, d.base) if l is not None and l.text), None)
    return f"line {d.where}{f' ({text})' if text else ''}: {', '.join(parts) if parts else 'the same'}"


@dataclass
class CountDiff:
    """Both sides' counts compared: every row (changed first), and what either side could not count."""

    base: str
    head: str
    rows: list[CountDelta] = field(default_factory=list)
    base_counts: Counts | None = None
    head_counts: Counts | None = None
    notes: list[str] = field(default_factory=list)
    by_line: list[LineCountDelta] = field(default_factory=list)  # per line of step(), where both sides have it
    # its lines in words (named_lines), made by diff_counts so that every view reads them: with the notes on what a
    # side could not count, and without the one that a side runs on the CPU (a CPU run's views say it once)
    listed: list[tuple[str, str]] = field(default_factory=list)
    listed_bare: list[tuple[str, str]] = field(default_factory=list)

    @property
    def changed(self) -> list[CountDelta]:
        return [r for r in self.rows if r.changed]

    @property
    def same(self) -> list[CountDelta]:
        return [r for r in self.rows if r.delta == 0]

    @property
    def one_side(self) -> list[CountDelta]:
        """Rows of a kind only one side counted (no difference can be stated)."""
        return [r for r in self.rows if r.delta is None]


def _index(c: Counts) -> dict[tuple[str, str], Tally]:
    return {t.key: t for t in c.tallies if t.kind in counts.KINDS and counts.KINDS[t.kind].structural}


def diff_counts(base: Counts | None, head: Counts | None, base_name: str = "base",
                head_name: str = "head", why: tuple[str | None, str | None] = (None, None)) -> CountDiff | None:
    """head - base of everything counted per step; None when neither side has a counted loop (a run recorded
    before counting existed, or a case that failed)."""
    if base is None and head is None:
        return None
    out = CountDiff(base_name, head_name, base_counts=base, head_counts=head)
    for name, c, none in ((base_name, base, why[0]), (head_name, head, why[1])):
        if c is None:  # `why`: the caller knows (it failed, --no-count, ...); else the run is older than counting
            out.notes.append(f"{name} has no counted loop ({none or 'a run recorded before flametool counted calls'})")
        else:
            out.notes += [f"{name}: {m}" for m in c.missing
                          if name == base_name or base is None or m not in base.missing]
    if base is not None and head is not None:  # what neither side could count: said once
        out.notes = [f"both: {n.partition(': ')[2]}" if n.startswith(f"{base_name}: ") and
                     n.partition(": ")[2] in head.missing else n for n in out.notes]
    if base is None or head is None:
        return _worded(out)
    ib, ih = _index(base), _index(head)
    order = {k: i for i, k in enumerate(counts.KINDS)}
    for key in sorted(set(ib) | set(ih), key=lambda k: (order.get(k[0], 99), k[1])):
        kind = key[0]
        tb, th = ib.get(key), ih.get(key)
        b = (tb.count if tb else Fraction(0)) if base.counted(kind) else None
        h = (th.count if th else Fraction(0)) if head.counted(kind) else None
        out.rows.append(CountDelta(kind, key[1], b, h, tb.bytes if tb else None, th.bytes if th else None))
    out.rows.sort(key=lambda r: (not r.changed, r.delta is None, order.get(r.kind, 99),
                                 -abs(r.delta or 0), r.name))
    out.by_line = diff_by_line(base, head)
    return _worded(out)


def _worded(d: CountDiff) -> CountDiff:
    d.listed, d.listed_bare = named_lines(d, notes=True), named_lines(d, notes=False)
    return d


def singular(title: str) -> str:
    """'Python calls' -> 'Python call', 'copies' -> 'copy': a kind's title for one of them."""
    return title[:-3] + "y" if title.endswith("ies") else title[:-1] if title.endswith("s") else title


def amount(n: Fraction, one: str, many: str) -> str:
    """'1 Python call', '2 Python calls', '0.25 (1/4) calls': the count with its noun, singular for exactly 1."""
    return f"{count_words(n)} {one if n == 1 else many}"


def shown_name(kind: str, name: str) -> str:
    """A counted name as the lines show it: a C++ one shortened (cxxnames); a Python function's, never a C++ one,
    whole ('step()' keeps its parentheses, a parameter list to shortened)."""
    return name if kind == "python" else cxxnames.shortened(name)


def thing(kind: str, name: str, n: Fraction) -> str:
    """What a count counts, in words: '1 call of torch.mm', '2 launches of kernel at::native::k<…>', '1 copy
    HtoD', '3 device allocations from torch caching allocator'; a kind added to counts.KINDS: '2 graph g'."""
    shown = shown_name(kind, name)
    if kind in ("python", "api"):
        return amount(n, f"call of {shown}", f"calls of {shown}")
    if kind == "kernel":
        return amount(n, f"launch of kernel {shown}", f"launches of kernel {shown}")
    if kind == "copy":
        return amount(n, f"copy {shown}", f"copies {shown}")
    if kind == "memset":
        return amount(n, "memset", "memsets")
    if kind == "device-alloc":
        return amount(n, f"device allocation from {shown}", f"device allocations from {shown}")
    word = counts.KINDS[kind].word if kind in counts.KINDS else ""
    return f"{count_words(n)} {word + ' ' if word else ''}{shown}"


def _bytes(value: Fraction | None) -> str:
    return f" ({count_words(value)} B)" if value else ""


def line(r: CountDelta, base: str = "base", head: str = "head") -> str:
    """One counted row in words, the side that makes more first: 'torch makes 1 call of torch.mm per step; numpy
    makes none of it', 'both make 1 launch of kernel nvjet per step', 'torch makes 1 launch of kernel k per step
    (numpy's kernels were not counted)'."""
    if r.base is None or r.head is None:  # a kind only one side counted
        (side, value), other = ((base, r.base), head) if r.base is not None else ((head, r.head), base)
        title = counts.KINDS[r.kind].title if r.kind in counts.KINDS else r.kind
        return f"{side} makes {thing(r.kind, r.name, value or Fraction(0))} per step ({other}'s {title} were not counted)"
    if r.head == r.base:
        return f"both make {thing(r.kind, r.name, r.head)} per step"
    (more, n, nb), (less, m, mb) = sorted(((head, r.head, r.head_bytes), (base, r.base, r.base_bytes)),
                                          key=lambda side: -side[1])
    rest = "none of it" if m == 0 else f"{count_words(m)}{_bytes(mb)}"
    return f"{more} makes {thing(r.kind, r.name, n)}{_bytes(nb)} per step; {less} makes {rest}"


def lines(d: CountDiff | None, notes: bool = True) -> list[str]:
    """What a step does, counted, exact, as every view lists it under the headline: every difference, then what
    is the same of kernels, copies and memsets, both sides' totals, and (`notes`) what a side could not count."""
    return [text for text, _ in named_lines(d, notes)]


def named_lines(d: CountDiff | None, notes: bool = True) -> list[tuple[str, str]]:
    """lines(), each with the full (demangled) name of what it counts where the line shows it shortened ('' where
    not): the report's hover text."""
    if d is None:
        return []

    def of(r: CountDelta) -> tuple[str, str]:
        full = cxxnames.demangled(r.name)
        return line(r, d.base, d.head), full if full != shown_name(r.kind, r.name) else ""

    out = [of(r) for r in d.changed]
    if d.base_counts is not None and d.head_counts is not None:
        if not out:
            out.append(("no difference: the same calls per step on both sides", ""))
        out += [of(r) for r in d.same if r.kind in counts.KINDS and counts.KINDS[r.kind].same_listed]
        out.append((f"{d.base}: {summary_line(d.base_counts)}; {d.head}: {summary_line(d.head_counts)}", ""))
        out += [(f"per step, {line_words(l)}", "") for l in d.by_line if l.changed]  # the totals, then by line
        alone = step_itself(d)
        if alone:  # numpy's matmul is a ufunc and a jitted jax function a PjitFunction: called through their types
            out.append((step_itself_note(alone), ""))
    # without `notes`, every note but the one that a side runs on the CPU (a CPU run says that once, in its own
    # words): a counted loop that failed, lines not listed, stay in every view
    return out + [of(r) for r in d.one_side] + [(n, "") for n in d.notes if notes or n.partition(": ")[2] != counts.ON_CPU]


# what a step calls through a C type, which cProfile records no call of: the built-in libraries' such calls
C_TYPED = "such as a NumPy ufunc like numpy.matmul or a function jax.jit compiled (jaxlib's PjitFunction)"


def step_itself(d: CountDiff) -> list[str]:
    """The sides of `d` whose only Python call cProfile counted is step() itself."""
    return [name for name, c in ((d.base, d.base_counts), (d.head, d.head_counts))
            if c is not None and [t.name for t in c.tallies if t.kind == "python"] == ["step()"]]


def step_itself_note(sides: list[str]) -> str:
    """Why `sides` count one Python call, step() itself: one sentence, which a view of several pairs says once
    for all of their sides (render/summary_formats.counted)."""
    return (f"{' and '.join(sides)}: the one Python call is step() itself (cProfile does not see a call made "
            f"through a C type, {C_TYPED})")


def summary_line(c: Counts) -> str:
    """'12 Python calls, 10 CUDA API calls, 1 kernel per step' (the kinds counted)."""
    parts = []
    for k in counts.COUNTED:
        if k.summed and c.counted(k.name) and (k.summed == "always" or c.of(k.name)):
            parts.append(amount(c.total(k.name), singular(k.title), k.title))
    return ", ".join(parts) + " per step" if parts else "nothing counted"


def to_json(d: CountDiff) -> dict:
    """Every row (docs/summary-json.md: counts): counts as exact strings ('1', '1/32')."""
    f = fraction_text  # exact: '1', '1/32'

    def row(r: CountDelta) -> dict:
        return {"kind": r.kind, "name": r.name, "base": f(r.base), "head": f(r.head), "delta": f(r.delta),
                "base_bytes": f(r.base_bytes), "head_bytes": f(r.head_bytes), "text": line(r, d.base, d.head)}

    def by_line(l: LineCountDelta) -> dict:
        def side(c: LineCounts | None) -> dict | None:
            return None if c is None else {"file": c.file, "line": c.line, "text": c.text,
                                          "counts": {k: f(v) for k, v in c.counts.items()}}

        return {"where": l.where, "matched_by": l.matched_by, "base": side(l.base), "head": side(l.head),
                "delta": {k: f(l.delta(k)) for k in l.kinds if l.delta(k) != 0}, "text": line_words(l)}

    extra = {"by_line": [by_line(l) for l in d.by_line]} if d.by_line else {}  # a run without: as it was
    return {"base": d.base, "head": d.head,
            "differences": [row(r) for r in d.changed],
            "same": [row(r) for r in d.same],
            "one_side": [row(r) for r in d.one_side],
            "notes": list(d.notes),
            "base_counts": d.base_counts.to_json() if d.base_counts else None,
            "head_counts": d.head_counts.to_json() if d.head_counts else None, **extra}
