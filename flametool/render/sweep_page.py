"""The report of a sweep run: the view model its template (templates/sweep.html.j2) reads, decided here as
plain dataclasses of strings and numbers, as render/html.py does for a compare run. The page is one file,
its plots inline SVG drawn on the server (charts.time_plot, charts.ratio_plot)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from markupsafe import Markup

from .. import __version__
from . import charts, format as fmt, report_counts
from ..analyse.sweep import SweepAnalysis, side
from ..workload.ops import OPS


@dataclass
class SweepCell:
    text: str
    title: str = ""  # more, on hover
    cls: str = ""


@dataclass
class SweepReport:
    title: str
    run_dir: str
    generated: str
    version: str
    complete: bool
    lines: list[str]  # the answers: each case's crossover, each pair's ratio in words
    plot: charts.LogChart
    ratios: charts.LogChart | None
    ratio_titles: list[tuple[str, str]]  # (pair, colour)
    layers: charts.StackedChart | None  # --sample: host time by layer, a bar per case and sampled size
    unanalysed: list[str]  # --sample: the sizes profiled that have no layers, and why
    legend: list[tuple[str, str, str]]  # (case, colour, "")
    columns: list[str]
    rows: list[list[SweepCell]]
    failures: list[str]
    method: str
    environment: list[tuple[str, str]]
    css: Markup
    sections: list[tuple[str, str]]
    on_gpu: bool = True  # False: a CPU sweep, worded for the CPU (no GPU lines, crossovers or launch cost)
    headline_title: str = "Where launch cost stops mattering"
    plot_title: str = "Host and GPU time per call against size"
    plot_caption: str = ""
    counts: report_counts.CountsSection | None = None  # --sample: the counted loops at each sampled size


SECTIONS = [("headline", "Answers"), ("plot", "Time per call"), ("ratio", "Wall-time ratio"), ("layers", "Layers"),
            ("counts", "Counted"), ("table", "Table"), ("environment", "Environment")]

METHOD = ("Each size is timed in every process of the run with every case built side by side and their loops "
          "interleaved (AB BA BA AB), as compare times one shape; a loop is --iters calls, fewer where that would "
          "take more than 0.2 s or queue more than 256 launches. Host: the host clock around the loop's launches. "
          "GPU: CUDA events around the same launches. Wall: the host clock until the synchronisation after the "
          "loop, per call: what a program that runs these calls back to back feels. A case is host-bound at a "
          "size where its GPU time per call is within 1.2× of its host time: the GPU waited on the host. Ratios "
          "are paired (taken within each process, pooled over processes) with a Student t 95% interval. The "
          "share of wall time is the slower case's extra host time as far as its wall time grew by it, over its "
          "wall time: 0 where the launch queue hides the extra host time.")


METHOD_CPU = ("Each size is timed in every process of the run with every case built side by side and their loops "
              "interleaved (AB BA BA AB), as compare times one shape; a loop is --iters calls, fewer where that would "
              "take more than 0.2 s. Host: the host clock around the loop's calls; on the CPU the host does all the "
              "work, so there is no GPU time and no crossover. Wall: the host clock until the end of the loop, per "
              "call. Ratios are paired (taken within each process, pooled over processes) with a Student t 95% "
              "interval. The share of wall time is the slower case's extra host time over its wall time.")
PLOT_CAPTION = ("Solid: host time per call (launch cost). Dashed: GPU time per call by CUDA events; at a host-bound "
                "size the GPU waits for each launch, so the events show the host's time there and the dashed line "
                "lies on the solid one. Right of a case's crossover (dotted; the diamond is where the GPU's own time, "
                "on the line through its GPU-bound sizes, meets the host's) the GPU sets the pace and extra host time "
                "hides behind the launch queue; left of it, every microsecond of host time is a microsecond of wall "
                "time.")
PLOT_CAPTION_CPU = ("Host time per call of each case by the host clock: on the CPU the host does all the work, "
                    "so there is no GPU line and no crossover.")


def cells(a: SweepAnalysis) -> tuple[list[str], list[list[SweepCell]]]:
    columns = ["size"]
    on_gpu = a.on_gpu  # a CPU sweep: no GPU column, and no bound column that would say "host" at every size
    for label in a.curves:
        columns += [f"{label} host", f"{label} GPU", f"{label} wall", f"{label} bound"] if on_gpu else [f"{label} host", f"{label} wall"]
    for sp in a.pairs:
        columns += [f"{sp.head} / {sp.base} wall", "extra host", "share of wall"]
    rows = []
    for shape in a.shapes:
        row = [SweepCell(a.size_name(shape), cls="label")]
        for label in a.curves:
            p = a.at(label, shape)
            if p is None or p.cpu_us is None:
                row += [SweepCell("failed", p.error or "", "bad") if p is not None and p.error else SweepCell("–")] + [
                    SweepCell("") for _ in range(3 if on_gpu else 1)]
                continue
            host = SweepCell(fmt.us(p.cpu_us), f"95%: {fmt.interval(p.cpu_interval, fmt.us)}" if p.cpu_interval else "")
            row += [host, SweepCell(fmt.us(p.gpu_us)), SweepCell(fmt.us(p.wall_us)),
                    SweepCell("host-bound" if p.host_bound else "GPU-bound", cls="host" if p.host_bound else "muted")
                    ] if on_gpu else [host, SweepCell(fmt.us(p.wall_us))]
        for sp in a.pairs:
            pp = sp.at(shape)
            w = pp.wall if pp else None
            if w is None or w.ratio is None:
                row += [SweepCell("–"), SweepCell(""), SweepCell("")]
                continue
            assert pp is not None  # w is its wall figures
            iv = w.ratio_interval
            row += [SweepCell("inconclusive" if side(pp) is None else fmt.ratio(w.ratio),  # the interval says nothing
                         (f"{fmt.ratio(w.ratio)}, " if side(pp) is None else "")
                         + (f"95%: {iv.low:.3f} to {iv.high:.3f}, {w.units} {w.unit_name}" if iv else "no interval")),
                    SweepCell(f"{pp.slower} +{fmt.us(extra)}" if (extra := fmt.extra_host(a, sp, pp)) and extra > 0 else "–"),
                    SweepCell(f"{pp.share:.0%}" if pp.share is not None else "–")]
        rows.append(row)
    return columns, rows


def build(a: SweepAnalysis, css: Markup, environment: list[tuple[str, str]]) -> SweepReport:
    run = a.run
    labels = list(a.curves)
    plot = charts.time_plot({l: [(p.size, a.size_name(p.shape), p.cpu_us, p.gpu_us) for p in pts]
                             for l, pts in a.curves.items()},
                            {l: (c.size, c.us) for l, c in a.crossovers.items() if c.size and c.us},
                            charts.MATMUL_AXIS if run.config.operation == "matmul" else
                            charts.ELEMENTS_AXIS if run.config.operation in OPS else charts.WORKLOAD_AXIS)
    pair_series = [(f"{sp.head} / {sp.base}", charts.case_colour(labels.index(sp.head)),
                    [(p.size, a.size_name(p.shape), p.wall.ratio,
                      p.wall.ratio_interval.low if p.wall.ratio_interval else None,
                      p.wall.ratio_interval.high if p.wall.ratio_interval else None)
                     for p in sp.points if p.wall is not None and p.wall.ratio])
                   for sp in a.pairs]
    pair_series = [s for s in pair_series if s[2]]
    lines = [f"{label}: {c.text}" for label, c in a.crossovers.items()]
    for sp in a.pairs:
        lines += fmt.sweep_pair_lines(sp, run.config.timing_processes, run.config.operation)
    lines += [f"{what}: {line}" for what, line in fmt.fairness(a, a.run)]
    failures = [f"{label}: failed: {r.error}" for label, r in run.results.items() if r.error]
    failures += [f"{label} at {a.size_name(p.shape)}: {p.error}" for label, r in run.results.items() for p in r.points if p.error]
    columns, rows = cells(a)
    dtypes = sorted({r.dtype for r in run.results.values()})
    return SweepReport(
        title=f"flametool sweep: {run.config.operation}: {' vs '.join(labels) or 'empty run'} ({', '.join(dtypes)})",
        run_dir=str(a.run_dir), generated=datetime.now().astimezone().isoformat(timespec="seconds"),
        version=__version__, complete=run.complete, lines=lines, plot=plot,
        ratios=charts.ratio_plot(pair_series) if pair_series else None,
        ratio_titles=[(t, colour) for t, colour, _ in pair_series],
        layers=charts.stacked_costs({f"{label} {size}": x for size, by_case in a.layers.items()
                                     for label, x in by_case.items()}) if a.layers else None,
        unanalysed=[f"{label} at {size}: no stack analysis: {reason}" for size, label, reason in a.unanalysed],
        legend=[(l, charts.case_colour(i), "") for i, l in enumerate(labels)],
        columns=columns, rows=rows, failures=failures, method=METHOD if a.on_gpu else METHOD_CPU,
        environment=environment, css=css,
        # a section the page does not have gets no link (Layers without --sample, the ratio with one case)
        sections=[(id, name) for id, name in SECTIONS if (id != "layers" or a.layers or a.unanalysed)
                  and (id != "ratio" or pair_series) and (id != "counts" or a.counts)],
        on_gpu=a.on_gpu,
        headline_title="Where launch cost stops mattering" if a.on_gpu else "Time per call against size, on the CPU",
        plot_title="Host and GPU time per call against size" if a.on_gpu else "Host time per call against size",
        plot_caption=PLOT_CAPTION if a.on_gpu else PLOT_CAPTION_CPU,
        counts=report_counts.sweep_counts_section(a),
    )
