"""Geometry of the report's layer charts, computed here so the template only draws rectangles: an SVG
made on the server needs no script to appear, prints, and looks the same in every browser."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .. import layers as ly

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


def delta(rows: list[dict], base: str, head: str) -> DeltaChart:
    """rows: run.json diff.layers; bars grow right (red) where head spends more, left (blue) where less."""
    width, label_w, row_h, top = 860, 190, 22, 8
    half = (width - label_w - 90) / 2
    zero = label_w + 45 + half
    step, span = axis(max((abs(r["delta_us_per_call"]) + r.get("delta_se_us", 0.0) for r in rows), default=1.0), 3)
    px = half / span
    chart = DeltaChart(width, top + len(rows) * row_h + 26, round(zero, 2), row_h,
                       f"{head} − {base}, us per call (whiskers: ± one standard error)")
    for i, r in enumerate(rows):
        d, se = r["delta_us_per_call"], r.get("delta_se_us", 0.0)
        w = abs(d) * px
        x = zero if d >= 0 else zero - w
        text = f"{d:+.2f}"
        right = d >= 0
        lo, hi = zero + (d - se) * px, zero + (d + se) * px
        # the number goes past the bar and its whisker, so neither hides it
        text_x = max(x + w, hi) + 4 if right else min(x, lo) - 4
        chart.rows.append(DeltaRow(
            r["layer"], top + i * row_h, round(x, 2), round(max(w, 0.5), 2), MORE if d > 0 else LESS, text,
            round(text_x, 2), "start" if right else "end", round(lo, 2), round(hi, 2),
        ))
    axis_y = top + len(rows) * row_h
    n = round(span / step)
    chart.ticks = [Tick(round(zero + k * step * px, 2), f"{k * step:+g}" if k else "0") for k in range(-n, n + 1)]
    chart.height = axis_y + 22
    return chart
