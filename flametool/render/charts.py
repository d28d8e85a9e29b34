"""Geometry of the report's layer charts, computed here so the template only draws rectangles: an SVG
made on the server needs no script to appear, prints, and looks the same in every browser."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import cast

from ..analyse import layers as ly
from ..analyse.attribution import CaseCosts
from ..analyse.treediff import LayerDelta
from .format import shown_delta

# Light colours so that dark text reads on every one of them; the flame graphs use the same ones.
LAYER_COLOURS = {
    "Python": "#a6c8ec",
    "Cython": "#fdc086",
    "NumPy": "#9fd8d3",
    "PyTorch binding": "#f4a3a4",
    "PyTorch dispatcher": "#d2b4de",
    "ATen/CUDA glue": "#f9c9dc",
    "cuBLAS": "#a8d8a0",
    "CUDA runtime/driver": "#f6e08a",
    "C library/allocator": "#d7c0ae",
    "CPU BLAS": "#cfe8a9",
    "loop": "#dddddd",
    ly.OTHER: "#e6e6e6",
}
FALLBACK = ("#c9d6df", "#e3d5ca", "#d5e3ca", "#e0cfe6", "#f0e0b8")
MORE = "#d6604d"  # head spends more: red, as in differential flame graphs
LESS = "#4393c3"  # head spends less: blue


def colour(layer: str) -> str:
    layer = ly.canonical(layer)  # a layer's name on the CPU (ATen glue) keeps its colour
    if layer in LAYER_COLOURS:
        return LAYER_COLOURS[layer]
    return FALLBACK[sum(map(ord, layer)) % len(FALLBACK)]


def axis(value: float, divisions: int = 5) -> tuple[float, float]:
    """(step, top): a round tick step (1, 2, 2.5 or 5 times a power of ten) about value/divisions, and
    the first multiple of it at or above value, so a bar ends near the right edge."""
    if value <= 0:
        return 0.2, 1.0
    raw = value / divisions
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw * (1 - 1e-9))
    return step, math.ceil(value / step - 1e-9) * step


def fmt(value: float) -> str:
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if abs(value) >= 100:
        return f"{value:.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


@dataclass
class Tick:
    x: float
    text: str
    row: int = 0  # a second row below the first, for a label that would overlap its neighbour
    label_x: float | None = None  # where the label's centre goes, when not at x (kept inside the chart)


@dataclass
class Segment:
    layer: str
    x: float
    w: float
    us: float
    se: float
    colour: str
    text: str  # drawn inside when it fits, else ""


@dataclass
class Bar:
    label: str
    y: float
    total_text: str
    segments: list[Segment]


@dataclass
class StackedChart:
    width: int
    height: int
    x0: float
    x1: float
    bar_height: int
    bars: list[Bar]
    ticks: list[Tick]
    legend: list[tuple[str, str]]  # (layer, colour)


@dataclass
class DeltaRow:
    layer: str
    y: float
    x: float
    w: float
    colour: str
    text: str
    text_x: float
    anchor: str
    se_x0: float
    se_x1: float


@dataclass
class DeltaChart:
    width: int
    height: int
    zero_x: float
    row_height: int
    title: str
    rows: list[DeltaRow] = field(default_factory=list)
    ticks: list[Tick] = field(default_factory=list)


def stacked(cases: dict[str, dict[str, tuple[float, float]]], totals: dict[str, float]) -> StackedChart:
    """cases: label -> layer -> (us per call, standard error); totals: label -> measured us per call."""
    width, x0, x1, bar_h, gap, top = 860, 130, 760, 28, 16, 8
    step, scale = axis(max([*totals.values(), *(sum(u for u, _ in c.values()) for c in cases.values())], default=1.0))
    px = (x1 - x0) / scale
    bars, seen = [], []
    x: float
    for i, (label, per_layer) in enumerate(cases.items()):
        x, segs = x0, []
        for layer in ly.order(per_layer):
            us, se = per_layer[layer]
            if us <= 0:
                continue
            w = us * px
            text = fmt(us) if w >= 34 else ""
            segs.append(Segment(layer, round(x, 2), round(w, 2), us, se, colour(layer), text))
            x += w
            if layer not in seen:
                seen.append(layer)
        bars.append(Bar(label, top + i * (bar_h + gap), f"{fmt(totals[label])} us", segs))
    axis_y = top + len(bars) * (bar_h + gap)
    ticks = [Tick(round(x0 + k * step * px, 2), f"{k * step:g}") for k in range(round(scale / step) + 1)]
    legend = [(layer, colour(layer)) for layer in ly.order(seen)]
    return StackedChart(width, axis_y + 24, x0, x1, bar_h, bars, ticks, legend)


def stacked_costs(costs: dict[str, CaseCosts]) -> StackedChart:
    """stacked() of attributions, one bar each: its layers with their standard errors, against its measured
    time per call."""
    return stacked({label: {k: (f.us_per_call, f.se_us) for k, f in x.layers.items()} for label, x in costs.items()},
                   {label: x.us_per_call for label, x in costs.items()})


def delta(rows: list[LayerDelta], base: str, head: str) -> DeltaChart:
    """rows: a diff's layers; bars grow right (red) where head spends more, left (blue) where less."""
    width, label_w, row_h, top = 860, 190, 22, 8
    half = (width - label_w - 90) / 2
    zero = label_w + 45 + half
    step, span = axis(max((abs(r.delta_us_per_call) + r.delta_se_us for r in rows), default=1.0), 3)
    px = half / span
    chart = DeltaChart(width, top + len(rows) * row_h + 26, round(zero, 2), row_h,
                       f"{head} − {base}, us per call (whiskers: ± one standard error)")
    for i, r in enumerate(rows):
        d, se = r.delta_us_per_call, r.delta_se_us
        w = abs(d) * px
        x = zero if d >= 0 else zero - w
        text = f"{shown_delta(r.base_us_per_call, r.head_us_per_call):+.2f}"  # as the layer table shows it
        right = d >= 0
        lo, hi = zero + (d - se) * px, zero + (d + se) * px
        # the number goes past the bar and its whisker, so neither hides it
        text_x = max(x + w, hi) + 4 if right else min(x, lo) - 4
        chart.rows.append(DeltaRow(
            r.layer, top + i * row_h, round(x, 2), round(max(w, 0.5), 2), MORE if d > 0 else LESS, text,
            round(text_x, 2), "start" if right else "end", round(lo, 2), round(hi, 2),
        ))
    axis_y = top + len(rows) * row_h
    n = round(span / step)
    chart.ticks = [Tick(round(zero + k * step * px, 2), f"{k * step:+g}" if k else "0") for k in range(-n, n + 1)]
    chart.height = axis_y + 22
    return chart


# --- a sweep's log-log plot -------------------------------------------------------------------------------

# One colour per case, readable on white and apart from each other (also for the common colour blindnesses):
# the first two are the pair a sweep usually compares.
CASE_COLOURS = ("#1f6fb4", "#d1495b", "#2a9d5b", "#7b5ea7", "#e08a00", "#5c6b73")


def case_colour(i: int) -> str:
    return CASE_COLOURS[i % len(CASE_COLOURS)]


@dataclass
class Mark:
    x: float
    y: float
    title: str  # the figure, shown on hover


@dataclass
class Series:
    label: str  # "cupy host"
    colour: str
    dash: str  # SVG stroke-dasharray: "" solid
    points: str  # SVG polyline points
    marks: list[Mark]
    shape: str  # marker: "circle" or "square"


@dataclass
class VLine:
    x: float
    text: str
    colour: str
    text_y: float
    y: float | None = None  # a point on the line to mark (where two curves meet)


@dataclass
class Band:
    """A ratio's interval at each size: a polygon around its line."""

    colour: str
    points: str


@dataclass
class LogChart:
    width: int
    height: int
    x0: float
    x1: float
    y0: float  # the plot's top
    y1: float  # the plot's bottom
    x_ticks: list[Tick]
    y_ticks: list[tuple[float, str]]  # (y, text)
    y_grid: list[float]
    series: list[Series] = field(default_factory=list)
    lines: list[VLine] = field(default_factory=list)
    bands: list[Band] = field(default_factory=list)
    y_title: str = ""
    x_title: str = ""
    reference: float | None = None  # y of a reference line (a ratio of 1)


class LogScale:
    """A value to a pixel on a log scale between lo and hi."""

    def __init__(self, lo: float, hi: float, p0: float, p1: float) -> None:
        self.a, self.b = math.log10(lo), math.log10(hi)
        self.p0, self.p1 = p0, p1

    def __call__(self, v: float) -> float:
        return round(self.p0 + (math.log10(v) - self.a) / (self.b - self.a) * (self.p1 - self.p0), 2)


def time_text(us: float) -> str:
    """A tick of a time axis: 100 ns, 1 us, 10 ms, 1 s."""
    for unit, scale in (("s", 1e6), ("ms", 1e3), ("us", 1.0), ("ns", 1e-3)):
        if us >= scale:
            return f"{us / scale:g} {unit}"
    return f"{us * 1e3:g} ns"


def decades(lo: float, hi: float) -> tuple[float, float, list[float]]:
    """The decades that hold lo..hi: (from, to, every power of ten between)."""
    a, b = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    if a == b:
        b += 1
    return 10.0 ** a, 10.0 ** b, [10.0 ** k for k in range(a, b + 1)]


def _frame(xs: list[float], x_names: list[str], height: int) -> tuple[LogScale, list[Tick], int, int]:
    width, left, right = 880, 78, 860
    lo, hi = min(xs), max(xs)
    pad = (hi / lo) ** 0.04 if hi > lo else 2.0
    sx = LogScale(lo / pad, hi * pad, left, right)
    ticks: list[Tick] = []
    ends = [-1e9, -1e9]  # where the last label of each row ends: a label that would overlap goes one row down
    for x, name in sorted(set(zip(xs, x_names))):
        half = 3.4 * len(name) + 4  # about half the label's width at the tick font's size
        row = next((r for r in (0, 1) if sx(x) - half >= ends[r]), None)
        if row is not None:
            centre = min(sx(x), width - half)
            ticks.append(Tick(sx(x), name, row, round(centre, 2)))
            ends[row] = centre + half
    return sx, ticks, width, height


MATMUL_AXIS = "size: N of an N×N by N×N product, or the cube root of M·K·N (log scale)"
ELEMENTS_AXIS = "size: elements per operand (log scale)"
WORKLOAD_AXIS = "size: the workload's shape (log scale)"  # its figures are FUNC's own: no number names them


def time_plot(curves: dict[str, list[tuple[float, str, float | None, float | None]]],
              crossovers: dict[str, tuple[float, float] | None], x_title: str = MATMUL_AXIS) -> LogChart:
    """Host and GPU time per call against size, both on log scales: per case a solid line (host) and a dashed
    one (GPU), each case its colour; a case's crossover (GPU time overtakes host time) a vertical line with
    the point where they meet. curves: label -> [(size, size name, host us, GPU us)]; crossovers: label ->
    (size, us per call there)."""
    xs = [x for pts in curves.values() for x, _, _, _ in pts]
    names = [n for pts in curves.values() for _, n, _, _ in pts]
    values = [v for pts in curves.values() for _, _, h, g in pts for v in (h, g) if v]
    if not xs or not values:
        xs, names, values = [1.0, 2.0], ["", ""], [1.0, 10.0]
    sx, x_ticks, width, height = _frame(xs, names, 440)
    top, bottom = 14, height - 48
    lo, hi, powers = decades(min(values), max(values))
    sy = LogScale(lo, hi, bottom, top)
    chart = LogChart(width, height, sx.p0, sx.p1, top, bottom, x_ticks, [(sy(v), time_text(v)) for v in powers],
                     [sy(m * v) for v in powers[:-1] for m in (2, 5)], y_title="time per call (log scale)",
                     x_title=x_title)
    for i, (label, pts) in enumerate(curves.items()):
        colour = case_colour(i)
        for kind, dash, marker, at in (("host", "", "circle", 2), ("GPU", "6 4", "square", 3)):
            # p[at]: the host's or the GPU's us, a float where it is not None
            got = cast("list[tuple[float, str, float]]", [(p[0], p[1], p[at]) for p in pts if p[at]])
            if not got:
                continue
            marks = [Mark(sx(x), sy(v), f"{label} {kind} at {name}: {time_text(v) if v >= 1000 else f'{v:,.2f} us'}")
                     for x, name, v in got]
            chart.series.append(Series(f"{label} {kind}", colour, dash, " ".join(f"{m.x},{m.y}" for m in marks),
                                       marks, marker))
        crossing = crossovers.get(label)
        if crossing:
            size, us = crossing
            chart.lines.append(VLine(sx(size), f"{label} ≈ {size:,.0f}", colour, top + 14 + 16 * len(chart.lines), sy(us)))
    return chart


RATIO_TICKS = (0.05, 0.1, 0.2, 0.25, 0.5, 0.67, 0.8, 0.9, 1, 1.1, 1.25, 1.5, 2, 3, 4, 5, 10, 20)


def ratio_plot(pairs: list[tuple[str, str, list[tuple[float, str, float, float | None, float | None]]]]) -> LogChart:
    """Each pair's wall-time ratio (head / base) against size, its 95% interval as a band, and a line at 1:
    above it the head is slower. pairs: [(title, colour, [(size, size name, ratio, low, high)])]. Intervals are
    drawn within the plot's range (a wide one runs off it), which the ratios themselves set."""
    xs = [p[0] for _, _, pts in pairs for p in pts]
    names = [p[1] for _, _, pts in pairs for p in pts]
    ratios = [p[2] for _, _, pts in pairs for p in pts] or [1.0]
    if not xs:
        xs, names = [1.0, 2.0], ["", ""]
    sx, x_ticks, width, height = _frame(xs, names, 300)
    top, bottom = 14, height - 48
    reach = max(1.25, max(max(r, 1 / r) for r in ratios) * 1.15)
    lo, hi = 1 / reach, reach
    sy = LogScale(lo, hi, bottom, top)
    steps: list[float] = []
    # from 1 outwards, each tick at least 16 px from the one before it
    for v in sorted((v for v in RATIO_TICKS if lo <= v <= hi), key=lambda v: abs(math.log(v))):
        if all(abs(sy(v) - sy(w)) >= 16 for w in steps):
            steps.append(v)
    chart = LogChart(width, height, sx.p0, sx.p1, top, bottom, x_ticks, [(sy(v), f"{v:g}×") for v in sorted(steps)], [],
                     y_title="wall-time ratio (log scale)", x_title="size (log scale)", reference=sy(1.0))
    clip = lambda v: min(max(v, lo), hi)  # noqa: E731
    for title, colour, pts in pairs:
        marks = [Mark(sx(x), sy(clip(r)), f"{title} at {name}: {r:.3f}×"
                      + (f" (95%: {l:.3f} to {h:.3f})" if l is not None and h is not None else ""))
                 for x, name, r, l, h in pts]
        chart.series.append(Series(title, colour, "", " ".join(f"{m.x},{m.y}" for m in marks), marks, "circle"))
        banded = [(x, l, h) for x, _, _, l, h in pts if l is not None and h is not None]
        if len(banded) >= 2:
            upper = [f"{sx(x)},{sy(clip(h))}" for x, _, h in banded]
            lower = [f"{sx(x)},{sy(clip(l))}" for x, l, _ in reversed(banded)]
            chart.bands.append(Band(colour, " ".join(upper + lower)))
    return chart
