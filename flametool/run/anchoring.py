"""Anchored figures: one case in two sets of processes (two environments of one run, or two runs), each set also
timing an anchor case in the same processes (stats.py's docstring says why): the ratio of the case/anchor ratios
with a Welch t 95% interval, or speedfit's where each side has two or more processes, and the difference at the
pair's common speed. Apart from stats.py, which holds the figures of one set of processes."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import cast

import numpy as np

from . import speedfit
from .record import Run, base_label
from .stats import MAX_ADVISED_PROCESSES, Interval, PairFigures, Pooled, apart, pooled_level, t975, unit_figures
from .timing import Timing


def welch(a: list[float], b: list[float]) -> tuple[float, int] | None:
    """(standard error, degrees of freedom) of mean(b) - mean(a); None with fewer than two values a side."""
    if len(a) < 2 or len(b) < 2:
        return None
    va, vb = statistics.variance(a) / len(a), statistics.variance(b) / len(b)
    se = math.sqrt(va + vb)
    if se == 0:
        return 0.0, len(a) + len(b) - 2
    df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
    return se, max(1, int(df))


@dataclass
class Anchored:
    """A case on two sides (base, head: two environments of one run, or two runs), each side's processes
    also timing `anchor` beside it: the change of the case relative to the anchor, head against base."""

    case: str
    anchor: str
    ratio: float  # (case / anchor on the head side) / (case / anchor on the base side), at one speed when `speed` is fitted
    ratio_interval: Interval | None
    at_us: float  # the base's time per call at the pair's common speed (the fit's, SpeedFit.at_us; else common_speed)
    diff_us: float  # at_us * (ratio - 1)
    diff_interval: Interval | None
    anchor_change: float  # the anchor's own pooled time, head / base: how the host's speed moved
    absolute: PairFigures  # the case's pooled times, head against base, not anchored
    base_units: int
    head_units: int
    unit_name: str
    base_logs: list[float]  # log(case / anchor) per unit, each side
    head_logs: list[float]
    # the speed-aware estimate the ratio and its interval are (two or more processes a side); None: not fitted
    speed: speedfit.SpeedFit | None = None

    @property
    def reach(self) -> float | None:
        if self.ratio_interval is None:
            return None
        return max(self.ratio_interval.high / self.ratio - 1, 1 - self.ratio_interval.low / self.ratio)

    def reach_with(self, units: int) -> float | None:
        """The reach the ratio's interval would have with `units` processes a side that spread as these do."""
        if self.speed is not None:
            return self.speed.reach_with(units)
        if len(self.base_logs) < 2 or len(self.head_logs) < 2 or units < 2:
            return None
        var = statistics.variance(self.base_logs) + statistics.variance(self.head_logs)
        return math.exp(t975(2 * units - 2) * math.sqrt(var / units)) - 1

    def processes_to_settle(self, threshold: float) -> int | None:
        """Processes a side (as many on each) that would bring the ratio's interval clear of `threshold` (a
        ratio) at the spread seen and the same estimate; None when none up to MAX_ADVISED_PROCESSES would."""
        if self.speed is not None:
            return self.speed.processes_to_settle(threshold, MAX_ADVISED_PROCESSES)
        gap = abs(math.log(self.ratio) - math.log(threshold))
        if gap == 0 or len(self.base_logs) < 2 or len(self.head_logs) < 2:
            return None
        var = statistics.variance(self.base_logs) + statistics.variance(self.head_logs)
        for n in range(max(self.base_units, self.head_units, 2), MAX_ADVISED_PROCESSES + 1):
            if t975(2 * n - 2) * math.sqrt(var / n) < gap:
                return n
        return None


def common_speed(base_logs: list[float], base_anchor: np.ndarray, head_anchor: np.ndarray) -> float:
    """The base case's time per call at the speed common to both sides' units: its mean log ratio to the anchor
    on the base side, times the anchor's geometric mean over the units of both sides. Both sides, so that head
    against base and base against head state one difference with opposite signs, and the side whose processes
    happened to run fast or slow does not set the scale alone (on the H200, 2026-12-01, the anchor read 0.85
    to 1.21 times as long in one environment's processes as in the other's of the same run). The geometric
    mean, not the median process: a host with two speeds (cupy at 16-17 or 25-26 us a process there) puts
    the median of a dozen processes on either, as it put cupy@main at 16.20 us where the mean read 17.04."""
    logs = np.log(np.concatenate([base_anchor, head_anchor]))
    return float(math.exp(statistics.fmean(base_logs) + float(logs.mean())))


def anchored(case: str, anchor: str, base: tuple[Timing, Timing], head: tuple[Timing, Timing],
             base_us: float | None = None, anchor_us: tuple[float, float] | None = None,
             head_us: float | None = None, metric: str = "cpu_us") -> Anchored | None:
    """`base` and `head`: (the case's timing, the anchor's timing in the same processes) on each side.
    `base_us`, `head_us` / `anchor_us`: the pooled times of the case and of the anchor on each side, in their
    whole groups (by default pooled over the two cases), for the absolute figures given beside. None when a
    side has nothing to compare."""
    vb, ub = unit_figures(list(base), metric)
    vh, uh = unit_figures(list(head), metric)
    if vb.shape[1] == 0 or vh.shape[1] == 0:
        return None
    db, dh = list(np.log(vb[0]) - np.log(vb[1])), list(np.log(vh[0]) - np.log(vh[1]))
    log_ratio = statistics.fmean(dh) - statistics.fmean(db)
    ratio = math.exp(log_ratio)
    at_us = common_speed(db, vb[1], vh[1])
    if base_us is None:
        base_us = float(pooled_level(vb)[0])
    if anchor_us is None:
        anchor_us = (float(pooled_level(vb)[1]), float(pooled_level(vh)[1]))
    ratio_iv = diff_iv = None
    method = None
    speed = speed_fit(base, head, metric)
    if speed is not None:  # two or more processes a side: the speed-aware estimate, at its common speed
        ratio, at_us = speed.ratio, speed.at_us
        if speed.low is not None and speed.high is not None:
            method = f"{speed.method}, of log({case} / {anchor})" + (
                f" on log({anchor} time), slope {speed.slope:+.3f}" if speed.adjusted else "")
            ratio_iv = Interval(speed.low, speed.high, method)
    else:
        w = welch(db, dh)
        if w is not None:
            half = t975(w[1]) * w[0]
            method = (f"Welch t 95% over {len(db)} + {len(dh)} {ub if ub == uh else ub + ' / ' + uh} of "
                      f"log({case} / {anchor})")
            ratio_iv = Interval(math.exp(log_ratio - half), math.exp(log_ratio + half), method)
    if ratio_iv is not None:
        diff_iv = Interval(at_us * (ratio_iv.low - 1), at_us * (ratio_iv.high - 1),
                           f"{method}, times the base's {at_us:,.2f} us at the common speed")
    if head_us is None:
        head_us = float(pooled_level(vh)[0])
    # the absolute figures, the pooled times as every view shows them, with the interval of an unpaired pair
    absolute = apart(case, base, case, head, base_us, head_us, metric=metric)
    return Anchored(case, anchor, ratio, ratio_iv, at_us, at_us * (ratio - 1), diff_iv,
                    anchor_us[1] / anchor_us[0] if anchor_us[0] else math.nan, absolute, len(db), len(dh),
                    ub if ub == uh else f"{ub} / {uh}", db, dh, speed)


def speed_fit(base: tuple[Timing, Timing], head: tuple[Timing, Timing],
              metric: str = "cpu_us") -> speedfit.SpeedFit | None:
    """speedfit.fit on each side's processes (the case's and the anchor's rounds in each, interleaved), or None
    with fewer than two processes a side (the rounds of one process are then the units, unadjusted)."""
    sides = []
    for case, anchor in (base, head):
        y, x = speedfit.per_process([p.figures(metric) for p in case.processes],
                                    [p.figures(metric) for p in anchor.processes])
        if len(y) < 2:
            return None
        sides += [y, x]
    return speedfit.fit(sides[0], sides[1], sides[2], sides[3])


def anchored_pair(run: Run, base: str, head: str, pooled: dict[str, Pooled] | None = None) -> Anchored | None:
    """A pair of one run whose cases ran in processes of their own (two environments of `compare --env`), each
    beside the run's anchor: anchored at the sample shape. None when they shared processes, or either has no
    anchor beside it. `pooled`: group_pooled(run, True), for the figures in the cases' whole groups."""
    ab, ah = run.anchor_beside(base), run.anchor_beside(head)
    if ab is None or ah is None or run.paired(base, head):
        return None
    timings = [run.results[l].at_sample_shape if not run.results[l].error else None for l in (base, ab, head, ah)]
    if any(t is None for t in timings):
        return None
    known = pooled is not None and all(l in pooled for l in (base, ab, ah))
    sides = cast("list[Timing]", timings)  # none is None (checked above)
    pools = pooled if pooled is not None else {}  # read only where known (pooled is not None)
    return anchored(base_label(base), base_label(ab), (sides[0], sides[1]), (sides[2], sides[3]),
                    pools[base].us if known else None, (pools[ab].us, pools[ah].us) if known else None,
                    pools[head].us if known and head in pools else None)


def processes_a_side(figures: "PairFigures | Anchored") -> int:
    """The processes on the thinner side of a comparison, 1 where its units are the rounds of one process (which
    share that process's own speed, so their spread is not the spread between processes): a --fail-above verdict
    needs two or more (diff.verdict, and the runner's stopping rule, read it here)."""
    if isinstance(figures, Anchored):
        sides = min(figures.base_units, figures.head_units)
    else:
        sides = figures.units
    return sides if figures.unit_name == "processes" else 1
