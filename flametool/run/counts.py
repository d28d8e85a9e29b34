"""What one step() call does, counted: the records of a case's counted loop (measure/counting.py makes them,
run.json holds them beside the cProfile loop, analyse/countdiff.py compares them).

A count is per step, exact: a ``fractions.Fraction``, an integer where the work is the same every call and the
exact fraction where it is not (a cache refilled every N calls). In JSON a count is a string, "3" or "7/4", so
that nothing is rounded on the way; bytes likewise. Times are floats (us per step) and say what clock they are
read on: the host's under tracing for API calls, the GPU's for kernels, copies and memsets.

Kinds of tally (``Tally.kind``), one row each in ``COUNTED`` below, in the order tables list them:
- ``python``: Python-level calls by function, from the cProfile loop (pstats' call counts over its steps).
- ``api``: CUDA runtime and driver API calls by name (CUPTI activity records; host us under tracing).
- ``kernel``: kernels by name (GPU us).
- ``copy``: memory copies by direction (HtoD, DtoD, ...), with bytes; ``memset``: memsets, with bytes.
- ``device-alloc``: device allocations: the library's pool (torch's allocator statistics, CuPy's allocator,
  JAX's memory statistics) by name of the pool, and CUPTI's memory records (cudaMalloc and kin).
- ``host-alloc``: host memory tracemalloc sees: blocks and bytes kept per step (net), and the peak a step
  allocates above what it started with (transient bytes).

Per line of step() (``Counts.by_line``, issue 39): the same counts by the line of the case's step() that made
them, each the difference of two windows as the step's are, so that a line's count is exact and the lines
(with what no line made, ``OUTSIDE``) sum to the step's: every kind's tallies but the one-step peak of host
memory, which no line makes (``NOT_PLACED``). Runs recorded before have none.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

from .reader import MAX_COUNT


@dataclass(frozen=True)
class Kind:
    """One kind of tally and everything its readers say of it: measure/counting.py (whether its tallies carry a
    time), analyse/countdiff.py (its order, whether it makes two sides differ, its word in a diff's line, the
    totals), render/format.py (the counted loop's table: its column and how the column's cell is written),
    render/compare_tables.py and render/report_counts.py (the table's headers) and the report's note (what counts it). A new
    counted kind is a row of ``COUNTED`` (and the code in measure/counting.py that makes its tallies).

    name: ``Tally.kind`` in run.json. title: what people call a kind's tallies ('kernels'). word: put before a
    tally's name in a diff's line ('kernel nvjet_...'; '' where the name says it). clock: what its ``us`` are
    read on, run.json's ``clocks`` (None: its tallies carry no time from the tracer). counted_by: "cprofile"
    (counted where the cProfile loop ran), "tracer" (where CUPTI or torch.profiler could trace) or "always".
    structural: whether it can make two sides differ (host allocations read -1/64 and 0 in two runs of the
    same code: the interpreter's own bookkeeping). summed: in a side's totals line always ("always", when
    counted), only where a step made some ("made"), or never (""). same_listed: a tally alike on both sides
    is still listed (the GPU's work). column: the column of the counted loop's table it shows in (kinds that
    share one are listed in it together, its header their titles; None: not shown there); cell: how its
    column's cell is written, "total" ('12 in 5 functions'), "named" ('6 cudaGetDevice, 1 cuLaunchKernelEx',
    or 'not counted') or "listed" ('1 copy HtoD (4096 B)' for every kind of the column, '' where none).
    per_line: the header of its column in the tables per line of step(), where that is not its title: host
    memory is placed per line as the blocks each line keeps, net (blank on a line whose temporaries are freed),
    not as allocations made."""

    name: str
    title: str
    word: str = ""
    clock: str | None = None
    counted_by: str = "always"
    structural: bool = True
    summed: str = ""
    same_listed: bool = False
    column: str | None = None
    cell: str = "listed"
    per_line: str = ""

    @property
    def line_title(self) -> str:
        """Its column's header in the tables per line of step()."""
        return self.per_line or self.title


GPU_CLOCK = "GPU us per step"
COUNTED: tuple[Kind, ...] = (
    Kind("python", "Python calls", counted_by="cprofile", summed="always", column="python", cell="total"),
    Kind("api", "CUDA API calls", clock="host us per step under tracing (CUPTI: about 2x the untraced call)",
         counted_by="tracer", summed="always", column="api", cell="named"),
    Kind("kernel", "kernels", "kernel", GPU_CLOCK, "tracer", summed="always", same_listed=True, column="kernel",
         cell="named"),
    Kind("copy", "copies", "copy", GPU_CLOCK, "tracer", summed="made", same_listed=True, column="memory"),
    Kind("memset", "memsets", "", GPU_CLOCK, "tracer", summed="made", same_listed=True, column="memory"),
    Kind("device-alloc", "device allocations", "device allocation", column="memory"),
    Kind("host-alloc", "host allocations", "host", structural=False, column="memory",
         per_line="host blocks kept (net)"),
)
KINDS: dict[str, Kind] = {k.name: k for k in COUNTED}
CLOCKS = {k.name: k.clock for k in COUNTED if k.clock is not None}  # run.json's "clocks"
# Counts.missing's line for a case on the CPU: what a CPU run cannot count, which its views say once in their own
# words (render/format.GPU_COUNTS) where they list every other line of `missing` (the counted loop failed, ...)
ON_CPU = "the case runs on the CPU (no CUDA API calls or kernels to count)"


@dataclass(frozen=True)
class Column:
    """A column of the counted loop's table: its header (its kinds' titles), how its cell is written, its kinds."""

    title: str
    cell: str
    kinds: tuple[str, ...]


def columns() -> list[Column]:
    """The counted loop's table's columns after the case's, from ``COUNTED``: 'Python calls', 'CUDA API calls',
    'kernels', 'copies, memsets, device allocations'."""
    grouped: dict[str, list[Kind]] = {}
    for k in COUNTED:
        if k.column is not None:
            grouped.setdefault(k.column, []).append(k)
    return [Column(", ".join(k.title for k in ks), ks[0].cell, tuple(k.name for k in ks)) for ks in grouped.values()]

NET_KINDS = ("device-alloc", "host-alloc")  # what a step keeps, net: the only counts that can be below 0


def fraction_text(value: Fraction | None) -> str | None:
    """'3', '7/4'; None stays None."""
    if value is None:
        return None
    return str(value.numerator) if value.denominator == 1 else f"{value.numerator}/{value.denominator}"


def parse_fraction(text: object) -> Fraction:
    """A count as run.json writes it ('3', '7/4'); an int is taken as it is. Anything else raises ValueError."""
    if isinstance(text, bool):
        raise ValueError(f"not a count: {text!r}")
    if isinstance(text, int):
        return Fraction(text)
    if not isinstance(text, str) or len(text) > 64:
        raise ValueError(f"not a count: {text!r}")
    num, sep, den = text.partition("/")
    # ASCII digits only: str.isdigit() takes '٣' (and int() reads it as 3), which no run writes
    if not (_digits(num.removeprefix("-")) and (not sep or _digits(den))):
        raise ValueError(f"not a count: {text!r}")
    if sep and int(den) == 0:
        raise ValueError(f"not a count: {text!r}")
    if abs(int(num)) > MAX_COUNT or (sep and int(den) > MAX_COUNT):  # as every count of run.json is bounded
        raise ValueError(f"not a count: {text!r} (beyond {MAX_COUNT:.0e})")
    return Fraction(int(num), int(den) if sep else 1)


def _digits(text: str) -> bool:
    return bool(text) and text.isascii() and text.isdigit()


def count_words(value: Fraction, sign: bool = False) -> str:
    """A per-step count for people: '3', '0.25 (1/4)', with `sign` '+1', '+4.794 (46741/9750)' (a count that
    is not the same every call, as a busy-wait's clock reads, says its size first and its exact value after)."""
    text = (str(value.numerator) if value.denominator == 1
            else f"{float(value):.4g} ({value.numerator}/{value.denominator})")
    return ("+" + text) if sign and value > 0 else text


@dataclass
class Tally:
    """One thing a step does, per step: `count` of it, `bytes` where it moves or holds memory, `us` its time
    (``Counts.clocks`` says which clock each kind's times are read on)."""

    kind: str
    name: str
    count: Fraction
    bytes: Fraction | None = None
    us: float | None = None

    @property
    def key(self) -> tuple[str, str]:
        return self.kind, self.name

    def to_json(self) -> dict:
        data: dict = {"kind": self.kind, "name": self.name, "count": fraction_text(self.count)}
        if self.bytes is not None:
            data["bytes"] = fraction_text(self.bytes)
        if self.us is not None:
            data["us"] = self.us
        return data

    @classmethod
    def from_json(cls, data: dict) -> "Tally":
        if not isinstance(data, dict) or not isinstance(data.get("kind"), str) or not isinstance(data.get("name"), str):
            raise ValueError(f"not a tally: {str(data)[:80]}")
        us = data.get("us")
        if us is not None and (isinstance(us, bool) or not isinstance(us, (int, float))):
            raise ValueError(f"tally {data['name'][:60]}: us is not a number")
        tally = cls(data["kind"], data["name"], parse_fraction(data.get("count")),
                    parse_fraction(data["bytes"]) if data.get("bytes") is not None else None,
                    float(us) if us is not None else None)
        # only what a step keeps, net, can be below 0 (it freed more than it took); a call or a kernel cannot
        if tally.kind not in NET_KINDS and (tally.count < 0 or (tally.bytes is not None and tally.bytes < 0)):
            raise ValueError(f"tally {data['name'][:60]!r}: count {data.get('count')!r} is below 0")
        return tally



OUTSIDE = ""  # LineCounts.file of what no line of step() made (another thread; the window's edges)
NOT_PLACED = {("host-alloc", "peak above start, one step")}  # tallies no line makes: not in by_line's sums


@dataclass
class LineCounts:
    """What one line of step() does per step, counted: {kind: count} (exact; the kinds ``Counts.by_line_kinds``
    lists, a kind left out where the line made none). `file` as the per-line record names the step's file, ''
    (OUTSIDE) with line 0 for what no line made; `text`: the line's text where the file was read, else None."""

    file: str
    line: int
    counts: dict[str, Fraction] = field(default_factory=dict)
    text: str | None = None

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}" if self.file != OUTSIDE else "outside step()'s lines"

    def to_json(self) -> dict:
        return {"file": self.file, "line": self.line, "text": self.text,
                "counts": {k: fraction_text(v) for k, v in self.counts.items()}}

    @classmethod
    def from_json(cls, data: dict) -> "LineCounts":
        if not isinstance(data, dict) or not isinstance(data.get("file"), str):
            raise ValueError(f"not a line's counts: {str(data)[:80]}")
        line, got, text = data.get("line"), data.get("counts", {}), data.get("text")
        if not isinstance(line, int) or isinstance(line, bool) or line < 0:
            raise ValueError(f"line's counts {data['file'][:60]}: line is not a whole number")
        if not isinstance(got, dict) or not all(isinstance(k, str) for k in got):
            raise ValueError(f"line's counts {data['file'][:60]}:{line}: counts is not an object")
        # the text is data from a file anyone can write: every view cleans it (sources.clean_text) as it shows it
        return cls(data["file"], line, {k: parse_fraction(v) for k, v in got.items()},
                   text[:1000] if isinstance(text, str) else None)


@dataclass
class Counts:
    """A case's counted loop: what a step does (tallies, per step), how it was counted, and what could not be.

    steps: the steps the counts are read over (the difference of two windows of `steps` and 2x`steps` calls
    for the traced counts, so that what the synchronisation around a window does cancels out); python_steps:
    the cProfile loop's steps. us_per_call: host us per operation of the counted loop under tracing, beside
    the plain loop's (the case's own loops). tracer: what counted API calls and kernels ("cupti-python 13.4.0",
    "torch.profiler"), None where nothing could; missing: one line for each thing not counted, and why."""

    steps: int
    python_steps: int | None
    tallies: list[Tally] = field(default_factory=list)
    us_per_call: float | None = None
    tracer: str | None = None
    missing: list[str] = field(default_factory=list)
    ops_per_step: int = 1
    by_line: list[LineCounts] = field(default_factory=list)  # per line of step(), in source order; [] where not
    by_line_kinds: list[str] = field(default_factory=list)  # the kinds by_line places (in COUNTED's order)
    corrupted: str | None = None  # why these counts are not what a step does (its step removed the hook): kept apart

    def placed_total(self, kind: str) -> Fraction:
        """The step's count of a kind as by_line places it (the tallies of NOT_PLACED left out)."""
        return sum((t.count for t in self.of(kind) if t.key not in NOT_PLACED), Fraction(0))

    def line_total(self, kind: str) -> Fraction:
        """by_line's sum of a kind: equal to placed_total(kind) for every kind in by_line_kinds."""
        return sum((l.counts.get(kind, Fraction(0)) for l in self.by_line), Fraction(0))

    def of(self, kind: str) -> list[Tally]:
        return [t for t in self.tallies if t.kind == kind]

    def total(self, kind: str) -> Fraction:
        return sum((t.count for t in self.of(kind)), Fraction(0))

    def counted(self, kind: str) -> bool:
        """Whether this kind was counted at all (a kind with no tallies may be counted and be zero)."""
        by = KINDS[kind].counted_by if kind in KINDS else "always"
        if by == "cprofile":
            return self.python_steps is not None
        if by == "tracer":
            return self.tracer is not None
        return True

    def to_json(self) -> dict:
        return {"steps": self.steps, "python_steps": self.python_steps, "ops_per_step": self.ops_per_step,
                "us_per_call": self.us_per_call, "tracer": self.tracer, "missing": list(self.missing),
                "clocks": CLOCKS, "tallies": [t.to_json() for t in self.tallies],
                # only where counted per line: a run recorded before writes (and summarises) as it did
                **({"by_line_kinds": list(self.by_line_kinds), "by_line": [l.to_json() for l in self.by_line]}
                   if self.by_line else {}),
                **({"corrupted": self.corrupted} if self.corrupted else {})}

    @classmethod
    def from_json(cls, data: dict) -> "Counts":
        if not isinstance(data, dict):
            raise ValueError("counts: not an object")
        steps, python_steps = data.get("steps"), data.get("python_steps")
        if not isinstance(steps, int) or isinstance(steps, bool) or steps < 0:
            raise ValueError("counts: steps is not a whole number")
        if python_steps is not None and (not isinstance(python_steps, int) or isinstance(python_steps, bool)):
            raise ValueError("counts: python_steps is not a whole number")
        us = data.get("us_per_call")
        tallies = data.get("tallies", [])
        missing = data.get("missing", [])
        if not isinstance(tallies, list) or not isinstance(missing, list) or not all(isinstance(m, str) for m in missing):
            raise ValueError("counts: tallies or missing is not a list")
        tracer = data.get("tracer")
        by_line, kinds = data.get("by_line", []), data.get("by_line_kinds", [])
        if not isinstance(by_line, list) or not isinstance(kinds, list) or not all(isinstance(k, str) for k in kinds):
            raise ValueError("counts: by_line or by_line_kinds is not a list")
        return cls(steps=steps, python_steps=python_steps, tallies=[Tally.from_json(t) for t in tallies],
                   us_per_call=float(us) if isinstance(us, (int, float)) and not isinstance(us, bool) else None,
                   tracer=tracer if isinstance(tracer, str) else None, missing=list(missing),
                   ops_per_step=int(data.get("ops_per_step", 1)) if isinstance(data.get("ops_per_step", 1), int) else 1,
                   by_line=[LineCounts.from_json(l) for l in by_line], by_line_kinds=list(kinds),
                   corrupted=str(data["corrupted"])[:1000] if data.get("corrupted") else None)
