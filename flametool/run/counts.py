"""What one step() call does, counted: the records of a case's counted loop (measure/counting.py makes them,
run.json holds them beside the cProfile loop, analyse/countdiff.py compares them).

A count is per step, exact: a ``fractions.Fraction``, an integer where the work is the same every call and the
exact fraction where it is not (a cache refilled every N calls). In JSON a count is a string, "3" or "7/4", so
that nothing is rounded on the way; bytes likewise. Times are floats (us per step) and say what clock they are
read on: the host's under tracing for API calls, the GPU's for kernels, copies and memsets.

Kinds of tally (``Tally.kind``), in the order tables list them:
- ``python``: Python-level calls by function, from the cProfile loop (pstats' call counts over its steps).
- ``api``: CUDA runtime and driver API calls by name (CUPTI activity records; host us under tracing).
- ``kernel``: kernels by name (GPU us).
- ``copy``: memory copies by direction (HtoD, DtoD, ...), with bytes; ``memset``: memsets, with bytes.
- ``device-alloc``: device allocations: the library's pool (torch's allocator statistics, CuPy's allocator,
  JAX's memory statistics) by name of the pool, and CUPTI's memory records (cudaMalloc and kin).
- ``host-alloc``: host memory tracemalloc sees: blocks and bytes kept per step (net), and the peak a step
  allocates above what it started with (transient bytes).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

from .reader import MAX_COUNT

KINDS = ("python", "api", "kernel", "copy", "memset", "device-alloc", "host-alloc")
NET_KINDS = ("device-alloc", "host-alloc")  # what a step keeps, net: the only counts that can be below 0
KIND_TITLES = {"python": "Python calls", "api": "CUDA API calls", "kernel": "kernels", "copy": "copies",
               "memset": "memsets", "device-alloc": "device allocations", "host-alloc": "host allocations"}


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


CLOCKS = {"api": "host us per step under tracing (CUPTI: about 2x the untraced call)",
          "kernel": "GPU us per step", "copy": "GPU us per step", "memset": "GPU us per step"}


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
    corrupted: str | None = None  # why these counts are not what a step does (its step removed the hook): kept apart

    def of(self, kind: str) -> list[Tally]:
        return [t for t in self.tallies if t.kind == kind]

    def total(self, kind: str) -> Fraction:
        return sum((t.count for t in self.of(kind)), Fraction(0))

    def counted(self, kind: str) -> bool:
        """Whether this kind was counted at all (a kind with no tallies may be counted and be zero)."""
        if kind == "python":
            return self.python_steps is not None
        if kind in ("api", "kernel", "copy", "memset"):
            return self.tracer is not None
        return True

    def to_json(self) -> dict:
        return {"steps": self.steps, "python_steps": self.python_steps, "ops_per_step": self.ops_per_step,
                "us_per_call": self.us_per_call, "tracer": self.tracer, "missing": list(self.missing),
                "clocks": CLOCKS, "tallies": [t.to_json() for t in self.tallies]} | (
                {"corrupted": self.corrupted} if self.corrupted else {})

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
        return cls(steps=steps, python_steps=python_steps, tallies=[Tally.from_json(t) for t in tallies],
                   us_per_call=float(us) if isinstance(us, (int, float)) and not isinstance(us, bool) else None,
                   tracer=tracer if isinstance(tracer, str) else None, missing=list(missing),
                   ops_per_step=int(data.get("ops_per_step", 1)) if isinstance(data.get("ops_per_step", 1), int) else 1,
                   corrupted=str(data["corrupted"])[:1000] if data.get("corrupted") else None)
