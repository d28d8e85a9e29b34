"""The page of an atlas: the view model templates/atlas.html.j2 reads, decided here as plain dataclasses of
strings and numbers (as sweep_page.py does for a sweep): op x library host time per call, each library's ratio
to the op's fastest with its interval, the layer that differs most, a chart of every cell's layers, and a link
to each op's own report (its pairs' layer and frame diffs and flame graphs)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import cast

from markupsafe import Markup

from .. import __version__
from . import charts, format as fmt
from ..analyse.atlas import AtlasAnalysis, AtlasCell


@dataclass
class AtlasPageCell:
    us: str
    interval: str = ""
    ratio: str = ""
    differs: str = ""
    threads: str = ""  # all threads' CPU time per call
    cls: str = ""  # "fastest", "failed"
    counted: str = ""  # kernels and CUDA API calls per call (the counted loop), '' where not counted
    why: str = ""  # a failed cell's reason, its tooltip (the whole reason is under the table)


@dataclass
class FrameLine:
    library: str
    frames: list[tuple[str, str, str]]  # (frame, layer, self us per call)
    note: str


@dataclass
class OpRow:
    op: str
    does: str
    size: str
    dtype: str
    report: str  # the op's own report, relative to this page
    cells: list[AtlasPageCell]
    frames: list[FrameLine] = field(default_factory=list)
    error: str = ""


@dataclass
class AtlasPage:
    title: str
    run_dir: str
    generated: str
    version: str
    complete: bool
    libraries: list[str]
    rows: list[OpRow]
    chart: charts.StackedChart | None
    lines: list[str]
    method: str
    environment: list[tuple[str, str]]
    css: Markup
    sections: list[tuple[str, str]]
    headline_title: str = "Launch cost by op"  # on the CPU there is no launch: "Host time by op, on the CPU"
    item: str = "op"  # what a row is: 'op', 'workload' (an atlas of --workloads), 'op or workload'
    failures: list[str] = field(default_factory=list)  # "add jax: why it failed", under the table (a cell says 'failed')


def method(item: str = "op") -> str:
    """The page's note on how its figures were made; `item`: what a row is (AtlasAnalysis.item)."""
    at = "at the op's host-bound size" if item == "op" else "at its size"
    return (f"Each {item} is its own compare run (the folder linked from its row), {at}: every "
            "library built in each timing process and their loops interleaved, then each library alone under "
            "cProfile and py-spy --native. Host / call: the calling thread's clock around a loop of --iters calls, "
            "pooled over the processes at the median process's speed (as compare gives it, the figure its layers "
            "add up to), with its 95% interval. × fastest: "
            f"the ratio of its host time to the {item}'s fastest library, paired (taken within each process, pooled "
            "over processes) with a Student t 95% interval. All threads: CPU time of every thread of the process "
            "during the loop, per call: the host work a library hands to worker threads (jax does) beside the "
            "caller's own. Layers: the calling thread's samples only (stacks outside the loop, and worker threads, "
            "are not in them), each layer's share times the case's paired time per call; the layer that differs "
            "most is the one whose time differs most from the fastest library's.")


def cell(c: AtlasCell, fastest: str | None) -> AtlasPageCell:
    if c.error:
        return AtlasPageCell("failed", cls="failed", why=c.error)
    return AtlasPageCell(fmt.us(c.us), f"95%: {fmt.interval(c.interval, fmt.us_bare)}" if c.interval else "",
                fmt.ratio_to_fastest(c.ratio, fastest if c.label == fastest or c.ratio else ""), fmt.differs_most(c),
                f"all threads {fmt.us(c.all_threads_us)}" if c.all_threads_us is not None else "",
                "fastest" if c.label == fastest else "", c.counted)


def frames(c: AtlasCell) -> FrameLine:
    note = ", ".join(x for x in (fmt.many(c.samples, "sample") if c.samples is not None else "",
                                 f"{fmt.many(c.threads, 'thread')} stopped per sample" if c.threads is not None else "",
                                 f"sampling slowed the loop {c.slowdown:.2f}x" if c.slowdown else "") if x)
    return FrameLine(c.label, [(f.name, f.layer, fmt.us(f.self_us)) for f in c.frames], note)


def answer_ratio(c: AtlasCell, fastest: str) -> str:
    """'1.53x torch's time (95%: 1.51-1.56)': a library's ratio to its op's fastest, in an answer's words."""
    f = c.ratio
    if f is None or f.ratio is None:
        return "not compared"
    iv = f.ratio_interval
    return f"{f.ratio:.2f}x {fastest}'s time" + (f" (95%: {iv.low:.2f}-{iv.high:.2f})" if iv else "")


def ran_rows(a: AtlasAnalysis, environment: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The environment's rows with what ran read from each op's run (the atlas's own record has no timing
    processes: it read "processes run: – (3 asked)")."""
    asked = {"processes run": a.run.config.processes, "rounds run per process": a.run.config.repeats}

    def ran(key: str, values: dict[str, list[int]]) -> str:
        every = sorted({v for vs in values.values() for v in vs})
        if not every:
            return "–"
        text = (f"{every[0]} in each op's run" if len(every) == 1 else
                "; ".join(f"{op} {vs[0] if len(vs) == 1 else f'{vs[0]} to {vs[-1]}'}" for op, vs in values.items() if vs))
        return text + (f" ({asked[key]} asked)" if asked[key] is not None and every != [asked[key]] else "")

    measured = [r for r in a.rows if r.processes]
    got = {"processes run": ran("processes run", {r.op: r.processes for r in measured}),
           "rounds run per process": ran("rounds run per process", {r.op: r.rounds for r in measured})}
    return [(k, got.get(k, v)) for k, v in environment] + [(k, v) for k, v in got.items()
                                                          if k not in dict(environment)]


def build(a: AtlasAnalysis, css: Markup, environment: list[tuple[str, str]]) -> AtlasPage:
    rows, lines, bars, totals = [], [], {}, {}
    for r in a.rows:
        rows.append(OpRow(r.op, r.does, fmt.shape(r.shape), r.dtype, r.report,
                          [cell(r.cells[l], r.fastest) if l in r.cells else AtlasPageCell("–") for l in a.libraries],
                          [frames(c) for c in r.cells.values() if c.frames], r.error or ""))
        ok = [c for c in r.cells.values() if c.us is not None]
        if r.fastest and len(ok) > 1:  # every library's ratio, nearest the fastest first (not the slowest alone)
            others = sorted((c for c in ok if c.label != r.fastest), key=lambda c: cast(float, c.us))  # ok: us is not None
            lines.append(f"{r.op} ({fmt.shape(r.shape)}): fastest {r.fastest} at {fmt.us(r.cells[r.fastest].us)} per "
                         "call; " + "; ".join(
                             f"{c.label} {answer_ratio(c, r.fastest)}"
                             + (f", most in {fmt.differs_most(c)}" if c.differs_most else "") for c in others))
        for c in r.cells.values():
            if c.layers:
                assert c.us is not None  # a cell with layers was timed: they add up to its time
                bars[f"{r.op} {c.label}"] = {k: (v, c.layers_se.get(k, 0.0)) for k, v in c.layers.items()}
                totals[f"{r.op} {c.label}"] = c.us
    run = a.run
    dtypes = sorted({r.dtype for r in a.rows if r.dtype})
    return AtlasPage(
        title=f"flametool atlas: {', '.join(a.libraries) or 'no libraries'} on {run.config.device or 'cpu'} "
              f"({', '.join(dtypes)})",
        run_dir=str(a.run_dir), generated=datetime.now().astimezone().isoformat(timespec="seconds"),
        version=__version__, complete=run.complete, libraries=a.libraries, rows=rows,
        chart=charts.stacked(bars, totals) if bars else None, lines=lines, item=a.item,
        method=method(a.item),
        headline_title=f"Launch cost by {a.item}" if a.on_gpu else f"Host time by {a.item}, on the CPU",
        environment=ran_rows(a, environment),
        failures=[f"{r.op} {c.label}: {c.error}" for r in a.rows for c in r.cells.values() if c.error],
        css=css, sections=[("headline", "Answers"), ("table", f"{a.item.capitalize()} × library"), ("layers", "Layers"),
                           ("frames", "Top frames"), ("environment", "Environment")],
    )
