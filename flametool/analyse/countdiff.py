"""Structural differences, exact: what the head does per step() call that the base does not, and the reverse,
from the two sides' counted loops (counts.Counts). A count is exact (a Fraction), so a difference is too: +1
numpy.empty, -1 cudaStreamIsCapturing, kernel nvjet_... x1 in both. These come before any timed figure: they
need no interval.

Host allocations (tracemalloc) are not structural: they are listed but never make two sides differ here (blocks
kept per step read -1/64 in one run and 0 in the next on the H200: the interpreter's own bookkeeping).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

from ..run.counts import KINDS, Counts, Tally, count_words, fraction_text

STRUCTURAL = tuple(k for k in KINDS if k != "host-alloc")


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


@dataclass
class CountDiff:
    """Both sides' counts compared: every row (changed first), and what either side could not count."""

    base: str
    head: str
    rows: list[CountDelta] = field(default_factory=list)
    base_counts: Counts | None = None
    head_counts: Counts | None = None
    notes: list[str] = field(default_factory=list)

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
    return {t.key: t for t in c.tallies if t.kind in STRUCTURAL}


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
        return out
    ib, ih = _index(base), _index(head)
    order = {k: i for i, k in enumerate(KINDS)}
    for key in sorted(set(ib) | set(ih), key=lambda k: (order.get(k[0], 99), k[1])):
        kind = key[0]
        tb, th = ib.get(key), ih.get(key)
        b = (tb.count if tb else Fraction(0)) if base.counted(kind) else None
        h = (th.count if th else Fraction(0)) if head.counted(kind) else None
        out.rows.append(CountDelta(kind, key[1], b, h, tb.bytes if tb else None, th.bytes if th else None))
    out.rows.sort(key=lambda r: (not r.changed, r.delta is None, order.get(r.kind, 99),
                                 -abs(r.delta or 0), r.name))
    return out


KIND_WORDS = {"python": "", "api": "", "kernel": "kernel ", "copy": "copy ", "memset": "", "device-alloc":
              "device allocation ", "host-alloc": "host "}


def line(r: CountDelta) -> str:
    """'+1 numpy.empty', '-1 cudaStreamIsCapturing', 'kernel nvjet_... x1 in both', 'kernel k: 1 in base only'."""
    name = f"{KIND_WORDS.get(r.kind, '')}{r.name}"
    if r.base is None or r.head is None:  # a kind only one side counted
        side, value = ("base", r.base) if r.base is not None else ("head", r.head)
        return f"{name}: x{count_words(value or Fraction(0))} ({side} only counted {r.kind})"
    delta = r.head - r.base
    if delta == 0:
        return f"{name} x{count_words(r.head)} in both"
    nbytes = ""
    if r.base_bytes is not None or r.head_bytes is not None:
        nbytes = f", bytes {count_words(r.base_bytes or Fraction(0))} -> {count_words(r.head_bytes or Fraction(0))}"
    return f"{count_words(delta, sign=True)} {name} ({count_words(r.base)} -> {count_words(r.head)}{nbytes})"


def lines(d: CountDiff | None) -> list[str]:
    """What a step does, counted, head - base, exact, as diff and summary lead with it: every difference, then
    what is the same of kernels, copies and memsets, both sides' totals, and what a side could not count."""
    if d is None:
        return []
    out = [line(r) for r in d.changed]
    if d.base_counts is not None and d.head_counts is not None:
        if not out:
            out.append("no difference: the same calls per step on both sides")
        out += [line(r) for r in d.same if r.kind in ("kernel", "copy", "memset")]
        out.append(f"{d.base}: {summary_line(d.base_counts)}; {d.head}: {summary_line(d.head_counts)}")
    return out + [line(r) for r in d.one_side] + list(d.notes)


def summary_line(c: Counts) -> str:
    """'12 Python calls, 10 CUDA API calls, 1 kernel per step' (the kinds counted)."""
    parts = []
    for kind, word in (("python", "Python calls"), ("api", "CUDA API calls"), ("kernel", "kernels"),
                       ("copy", "copies"), ("memset", "memsets")):
        if c.counted(kind) and (kind in ("python", "api", "kernel") or c.of(kind)):
            parts.append(f"{count_words(c.total(kind))} {word}")
    return ", ".join(parts) + " per step" if parts else "nothing counted"


def to_json(d: CountDiff) -> dict:
    """Every row (docs/summary-json.md: counts): counts as exact strings ('1', '1/32')."""
    f = fraction_text  # exact: '1', '1/32'

    def row(r: CountDelta) -> dict:
        return {"kind": r.kind, "name": r.name, "base": f(r.base), "head": f(r.head), "delta": f(r.delta),
                "base_bytes": f(r.base_bytes), "head_bytes": f(r.head_bytes), "text": line(r)}

    return {"base": d.base, "head": d.head,
            "differences": [row(r) for r in d.changed],
            "same": [row(r) for r in d.same],
            "one_side": [row(r) for r in d.one_side],
            "notes": list(d.notes),
            "base_counts": d.base_counts.to_json() if d.base_counts else None,
            "head_counts": d.head_counts.to_json() if d.head_counts else None}
