"""How figures are written, in the terminal and in the report alike: one place, so the two never disagree."""

from __future__ import annotations

import re

from .stats import Interval, PairFigures

DASH = "–"


def us(value: float | None, unit: str = " us") -> str:
    """A time per call: '18.65 us', '142 us', '57.8 ms'."""
    if not isinstance(value, (int, float)):
        return DASH
    if value >= 10_000:
        return f"{value / 1000:,.1f} ms"
    if value >= 100:
        return f"{value:,.0f}{unit}"
    return f"{value:,.2f}{unit}"


def num(value: float) -> str:
    return f"{value:,.2f}"


def signed(value: float) -> str:
    return f"{value:+,.2f}"


def pm(value: float, se: float, sign: bool = False) -> str:
    return f"{signed(value) if sign else num(value)} ± {se:,.2f}"


def shape(value) -> str:
    return ",".join(map(str, value)) if isinstance(value, list) and value else DASH


def interval(iv: Interval | None, fmt=num) -> str:
    return f"{fmt(iv.low)}–{fmt(iv.high)}" if iv else "no interval"


def ratio(value: float | None) -> str:
    return f"{value:.3f}×" if isinstance(value, (int, float)) else DASH


def pair_sentence(f: PairFigures, where: str = "") -> str:
    """'torch / cupy = 0.672× (95%: 0.661–0.683); torch − cupy = −5.10 us per call (−5.31 – −4.89), paired
    over 5 processes'."""
    if f.ratio is None:
        return f"{f.head} against {f.base}{where}: nothing to compare"
    text = (f"{f.head} / {f.base} = {ratio(f.ratio)}"
            + (f" (95%: {interval(f.ratio_interval, lambda v: f'{v:.3f}')})" if f.ratio_interval else " (no interval)")
            + f"; {f.head} − {f.base} = {signed(f.diff_us)} us per call"
            + (f" (95%: {interval(f.diff_interval, signed)})" if f.diff_interval else ""))
    how = (f"paired over {f.units} {f.unit_name}" if f.paired else "not paired: each case in processes of its own")
    return f"{text}{where}, {how}"


def wide_note(f: PairFigures, processes: int) -> str | None:
    """One line when the ratio's interval is wide, with what to do."""
    if f.ratio is None or not f.wide:
        return None
    more = max(processes * 2, 5)
    if f.ratio_interval is None:
        return (f"{f.head} / {f.base}: no interval (too few processes or rounds); run with --processes {more} "
                "for one")
    half = max(f.ratio_interval.high / f.ratio - 1, 1 - f.ratio_interval.low / f.ratio)
    return (f"{f.head} / {f.base}: the interval reaches ±{half:.0%} from the ratio: the processes disagree; "
            f"run with --processes {more} for a tighter answer" + ("" if f.paired else ", and without --isolate"))


def closure_sentence(x: dict) -> str:
    """A case attribution's closure check in words (x: CaseCosts.to_json())."""
    c = x["closure"]
    return (f"layers sum to {c['layers_sum_us_per_call']:,.2f} of {c['measured_us_per_call']:,.2f} us per call "
            f"(ratio {c['ratio']:.3f}), from {x['samples']} samples")


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def visible(text: str) -> str:
    """Control characters (escape sequences in a frame name from another machine) shown as escapes."""
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)
