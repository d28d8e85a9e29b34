"""The report's Counted section: what one step() call does, counted (exact): each pair's differences, each case's
counts by kind with the names whole on hover, its other threads, and per line of step() (counted_lines.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import cast

from . import counted_lines, format as fmt
from ..run import counts
from ..run.counts import Column, Counts, count_words
from ..analyse import cxxnames
from ..analyse.compare import Analysis
from ..analyse.sweep import SweepAnalysis
from ..run.profiled import ProfileProcess


@dataclass
class CountsSection:
    """What one step() call does, counted (exact): each pair's differences first, then each case's counts."""

    pairs: list[tuple[str, list[tuple[str, str]]]]  # ("torch vs cupy", [(line, full name on hover or '')])
    headers: list[str]
    rows: list[list]  # a cell: text, or a named column's (shown, full name) pairs
    notes: list[str]
    # each case's threads other than the caller: case, CPU per call on them, samples, by layer, most own time
    threads: list[list[str]] = field(default_factory=list)
    sources: str = ""  # what counts which kind (counted_by), for the note above the table
    lines: counted_lines.CountedLines | None = None  # per line of step(), the GPU's busy share (counted_lines.py)


def counts_section(a: Analysis) -> CountsSection | None:
    """None for a run whose cases have no counted loop (recorded before counting): the page is as it was."""
    counted = {l: r.profile.counts for l, r in a.run.results.items() if r.profile is not None and r.profile.counts}
    if not counted:
        return None

    rows: list[list] = []
    cols, tracers = fmt.counted_columns(counted.values())  # a CPU run: no CUDA columns, all 'not counted'
    for label, c in counted.items():
        own = cast(ProfileProcess, a.run.results[label].profile).own_us_per_call  # counted: its counts are its profile's
        rows.append([label, *(named_cell(c, col) for col in cols),
                     f"{c.us_per_call:,.2f} us" + (f" ({c.us_per_call / own:.2f}× the {own:,.2f} us alone)" if own else "")
                     if c.us_per_call else "–"])
    on_cpu = not tracers and fmt.run_device(a.run) == "cpu"
    pairs = [(f"{p.head} vs {p.base}", p.counts.listed_bare if on_cpu else p.counts.listed)
             for p in a.pairs if p.counts is not None]
    notes = fmt.counted_notes(counted, on_cpu)
    threads = [[label, f"{t.us_per_call:,.2f} us", str(t.profile.samples) if t.profile else "–",
                "; ".join(f"{layer} {f.us_per_call:,.2f} us" for layer, f in
                          sorted(t.costs.layers.items(), key=lambda kv: -kv[1].us_per_call)) if t.costs
                else fmt.threads_unsampled(a.run.results[label], t),
                (f"{t.costs.frames[0].display} ({t.costs.frames[0].self.us_per_call:,.2f} us)"
                 if t.costs and t.costs.frames else "–")]
               for label, t in fmt.busy_threads(a.threads).items()]
    return CountsSection(pairs, ["case", *(col.title for col in cols), "counted loop, host time per call"],
                         rows, notes, threads, sources=counted_by(bool(tracers) or not on_cpu), lines=counted_lines.view(a))


def sweep_counts_section(a: SweepAnalysis) -> CountsSection | None:
    """A sweep --sample's counted loops: a row per case and sampled size, each pair's differences at each size
    (None where nothing was counted: a sweep without --sample, or a --no-count one)."""
    counted = {f"{label} at {size}": c for size, by_case in a.counts.items() for label, c in by_case.items()}
    if not counted:
        return None
    cols, tracers = fmt.counted_columns(counted.values())
    on_cpu = not tracers and not a.on_gpu
    rows: list[list] = [[name, *(named_cell(c, col) for col in cols),
                         f"{c.us_per_call:,.2f} us" if c.us_per_call else "–"] for name, c in counted.items()]
    pairs = [(f"{d.head} vs {d.base} at {size}", d.listed_bare if on_cpu else d.listed) for size, d in a.count_diffs]
    return CountsSection(pairs, ["case at size", *(col.title for col in cols), "counted loop, host time per call"],
                         rows, fmt.counted_notes(counted, on_cpu), sources=counted_by(bool(tracers) or not on_cpu))


def named_cell(c: Counts, col: Column) -> "str | list[tuple[str, str]]":
    """A counted table's cell: a named column's as (shown, full) pairs, each name shortened by template depth and
    its demangled whole on hover; the others as text."""
    tallies = sorted((t for t in c.tallies if t.kind in col.kinds), key=lambda t: (-t.count, t.name))
    if col.cell != "named" or not all(c.counted(k) for k in col.kinds) or not tallies:
        return fmt.count_cell(c, col, "–")
    return [(f"{count_words(t.count)} {cxxnames.shortened(t.name)}", cxxnames.demangled(t.name)) for t in tallies]


def counted_by(traced: bool = True) -> str:
    """What counts which kind, as the report's note says it: 'Python calls from the cProfile loop; CUDA API calls,
    kernels, copies and memsets from CUPTI in a counted loop of their own' (the kinds counted always, by their
    library's pool or tracemalloc, left to the table; `traced`: False on a CPU run, where no tracer ran)."""
    by = {"cprofile": "the cProfile loop", **({"tracer": "CUPTI in a counted loop of their own"} if traced else {})}
    parts = []
    for source, words in by.items():
        titles = [k.title for k in counts.COUNTED if k.counted_by == source]
        if titles:
            parts.append(f"{', '.join(titles[:-1]) + ' and ' if len(titles) > 1 else ''}{titles[-1]} from {words}")
    return "; ".join(parts)
