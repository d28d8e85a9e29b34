"""A speed-aware anchored estimate: one case on two sides (two environments of `compare --env`, two runs of
`diff RUN_A RUN_B`), each side's processes timing an anchor beside it, the host running each process (and
stretches within one) at one of two speeds.

The anchor cancels most of a process's speed: both cases in it move alike. Not all of it: on the H200
(2026-12-01) cupy/torch read about 4% higher in slow processes than in fast ones, so a side that drew more
slow processes leans (a null A/B read 1.026, 1.009 to 1.044). So the per-process log ratio of the case to the
anchor is modelled with the anchor's own log time (the process's speed, as the anchor reads it) as a
covariate, the slope shared by both sides and the side as the effect:

    log(case / anchor)_i = a + slope * log(anchor)_i + effect * [i on the head side] + e_i

fitted by ordinary least squares over the processes of both sides; exp(effect) is the head's ratio to the
base at one speed. Its 95% interval is Student t from the fit (n - 3 degrees of freedom), or a bootstrap over
each side's processes; the calibration on the reference runs (benchmarks/estimators.py) chose the fit's.

Where the two sides' speed ranges do not overlap, the slope cannot be told from the side: the fit would
extrapolate, so the figure is the unadjusted one, flagged (`overlap` False). Pure numpy, no record types: the
callers hand in per-process figures.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

CONFIDENCE = 0.95
BOOTSTRAP_RESAMPLES = 2000


def t975(df: int) -> float:
    """Student t two-sided 95% quantile (df >= 1), from the table stats uses; exact enough for intervals."""
    table = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262,
             10: 2.228, 11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 16: 2.120, 17: 2.110, 18: 2.101,
             19: 2.093, 20: 2.086, 25: 2.060, 30: 2.042, 40: 2.021, 60: 2.000, 120: 1.980}
    if df < 1:
        raise ValueError("t quantile needs at least one degree of freedom")
    return table[max(d for d in table if d <= df)] if df < 1000 else 1.960


@dataclass
class SpeedFit:
    """Head against base relative to the anchor, adjusted to one speed; the unadjusted figure beside it."""

    ratio: float  # exp(effect): the figure to lead with (the unadjusted one where the speeds do not overlap)
    low: float | None  # its 95% interval (None: too few processes)
    high: float | None
    method: str  # how the interval was made, in words
    adjusted: bool  # False: the unadjusted figure (speeds do not overlap, or too few processes to fit a slope)
    slope: float | None  # d log(case / anchor) / d log(anchor), shared by both sides (None: not fitted)
    base_range: tuple[float, float]  # the anchor's time per call (us) in the base side's processes, min and max
    head_range: tuple[float, float]
    overlap: bool  # the two ranges overlap
    unadjusted: float  # ratio of the sides' mean log ratios (the anchored figure without the speed term)
    unadjusted_low: float | None
    unadjusted_high: float | None
    base_units: int
    head_units: int
    residual_sd: float | None  # of the fit (log scale): the per-process spread left after the speed term
    se: float | None  # standard error of log(ratio)
    df: int | None
    # the base's log(case / anchor) at the common speed (the mean log anchor time over both sides' processes,
    # common_log_anchor): at_us, the base's time per call there, is the scale a difference is stated at; head
    # and base swapped give the same difference, negated
    base_level: float = 0.0
    common_log_anchor: float = 0.0

    @property
    def at_us(self) -> float:
        """The base case's time per call at the common speed of both sides' processes."""
        return math.exp(self.base_level + self.common_log_anchor)

    @property
    def reach(self) -> float | None:
        """How far the interval reaches from the ratio, relative (0.02: +-2%)."""
        if self.low is None or self.high is None:
            return None
        return max(self.high / self.ratio - 1, 1 - self.low / self.ratio)

    def _se_with(self, units: int) -> float:
        """The standard error with `units` processes a side: today's, shrunk as 1 / sqrt(processes)."""
        now = self.base_units * self.head_units / (self.base_units + self.head_units)  # n / 2 for n a side
        return (math.inf if self.se is None else self.se) * math.sqrt(now / (units / 2))

    def reach_with(self, units: int) -> float | None:
        """The reach with `units` processes a side that spread as these do."""
        if self.se is None or units < 2:
            return None
        return math.exp(t975(2 * units - 3) * self._se_with(units)) - 1

    def processes_to_settle(self, threshold: float, most: int = 100) -> int | None:
        """Processes a side (as many on each) that would bring the interval clear of `threshold` (a ratio) at
        the spread seen and this estimate; None when none up to `most` would."""
        gap = abs(math.log(self.ratio) - math.log(threshold))
        if gap == 0 or self.se is None or self.base_units + self.head_units < 4:
            return None
        for n in range(max(self.base_units, self.head_units, 2), most + 1):
            if t975(2 * n - 3) * self._se_with(n) < gap:
                return n
        return None

    def sentence(self, base: str = "base", head: str = "head") -> str:
        """One line: what the adjustment did (slope, each side's speed range, the unadjusted figure beside)."""
        def rng(r: tuple[float, float]) -> str:  # one figure where the range is one at this precision: not "1.2-1.2"
            low, high = f"{r[0]:.1f}", f"{r[1]:.1f}"
            return f"{low} us" if low == high else f"{low} to {high} us"

        un = f"unadjusted {self.unadjusted:.4f}" + (
            f" ({self.unadjusted_low:.4f} to {self.unadjusted_high:.4f})" if self.unadjusted_low is not None else "")
        # each process's geometric mean over its rounds (per_process), which reads above a run's own figure, a median
        # of its rounds: say which, so that the two are not read as one figure
        speeds = (f"the anchor took {rng(self.base_range)} a call in {base}'s processes, {rng(self.head_range)} in "
                  f"{head}'s (each process's geometric mean over its rounds)")
        if not self.overlap:
            return (f"speed adjustment: none, {speeds}: the ranges do not overlap, so a slope fitted across them "
                    f"would extrapolate; the figure is the {un}")
        if not self.adjusted:
            return f"speed adjustment: none (too few processes to fit a slope); {speeds}; the figure is the {un}"
        return (f"speed adjustment: log ratio on log anchor time, slope {self.slope:+.3f} shared by both sides "
                f"({self.base_units} + {self.head_units} processes), {speeds}; adjusted {self.ratio:.4f}, {un}")

    def to_json(self) -> dict:
        return {"ratio": self.ratio, "low": self.low, "high": self.high, "method": self.method,
                "adjusted": self.adjusted, "slope": self.slope, "base_range_us": list(self.base_range),
                "head_range_us": list(self.head_range), "overlap": self.overlap,
                "unadjusted": {"ratio": self.unadjusted, "low": self.unadjusted_low, "high": self.unadjusted_high},
                "base_processes": self.base_units, "head_processes": self.head_units,
                "residual_sd": self.residual_sd}


def ols(y: np.ndarray, x: np.ndarray, side: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Coefficients (intercept, effect, slope), their covariance and the residual degrees of freedom."""
    design = np.column_stack([np.ones_like(x), side, x])
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    resid = y - design @ coef
    df = len(y) - 3
    s2 = float(resid @ resid) / df if df > 0 else math.nan
    cov = s2 * np.linalg.pinv(design.T @ design)
    return coef, cov, df


def welch_log(db: np.ndarray, dh: np.ndarray) -> tuple[float, float | None, float | None]:
    """exp of mean(dh) - mean(db) with its Welch t 95% interval (None with fewer than two a side)."""
    d = float(dh.mean() - db.mean())
    if len(db) < 2 or len(dh) < 2:
        return math.exp(d), None, None
    va, vb = db.var(ddof=1) / len(db), dh.var(ddof=1) / len(dh)
    se = math.sqrt(va + vb)
    if se == 0:
        return math.exp(d), math.exp(d), math.exp(d)
    df = (va + vb) ** 2 / (va ** 2 / (len(db) - 1) + vb ** 2 / (len(dh) - 1))
    half = t975(max(1, int(df))) * se
    return math.exp(d), math.exp(d - half), math.exp(d + half)


def overlapping(xb: np.ndarray, xh: np.ndarray) -> bool:
    """The two sides' anchor log times share some range (each side's span reaches into the other's)."""
    return bool(max(xb.min(), xh.min()) <= min(xb.max(), xh.max()))


def fit(base_logs: ArrayLike, base_anchor_logs: ArrayLike, head_logs: ArrayLike, head_anchor_logs: ArrayLike,
        interval: str = "fit", seed: int = 0) -> SpeedFit:
    """The speed-aware estimate from per-process figures: `*_logs` each process's log(case / anchor),
    `*_anchor_logs` its log(anchor time per call, us). interval: "fit" (Student t from the OLS fit) or
    "bootstrap" (percentiles over resamples of each side's processes, refitted)."""
    db, dh = np.asarray(base_logs, float), np.asarray(head_logs, float)
    xb, xh = np.asarray(base_anchor_logs, float), np.asarray(head_anchor_logs, float)
    if len(db) != len(xb) or len(dh) != len(xh) or not len(db) or not len(dh):
        raise ValueError("each side needs as many anchor times as log ratios, and at least one process")
    un, ul, uh = welch_log(db, dh)
    ranges = (float(np.exp(xb.min())), float(np.exp(xb.max()))), (float(np.exp(xh.min())), float(np.exp(xh.max())))
    over = overlapping(xb, xh)
    y, x = np.concatenate([db, dh]), np.concatenate([xb, xh])
    side = np.concatenate([np.zeros(len(db)), np.ones(len(dh))])
    within = np.concatenate([xb - xb.mean(), xh - xh.mean()])

    def made(ratio: float, low: float | None, high: float | None, method: str, adjusted: bool, slope: float | None,
             sd: float | None, se: float | None, df: int | None, base_level: float) -> SpeedFit:
        return SpeedFit(ratio, low, high, method, adjusted, slope, ranges[0], ranges[1], over, un, ul, uh, len(db),
                        len(dh), sd, se, df, base_level, float(x.mean()))

    if not over or len(y) < 4 or float(within @ within) == 0:
        resid = np.concatenate([db - db.mean(), dh - dh.mean()])
        df = len(y) - 2
        sd = math.sqrt(float(resid @ resid) / df) if df > 0 else None
        se = (math.log(uh) - math.log(un)) / t975(max(1, df)) if uh is not None and uh > un else None
        return made(un, ul, uh, "Welch t 95% of the unadjusted log ratios", False, None, sd, se,
                    df if df > 0 else None, float(db.mean()))
    coef, cov, df = ols(y, x, side)
    effect, slope = float(coef[1]), float(coef[2])
    se = math.sqrt(cov[1, 1])
    sd = math.sqrt(max(0.0, float(np.sum((y - np.column_stack([np.ones_like(x), side, x]) @ coef) ** 2)) / df))
    if interval == "bootstrap":
        rng = np.random.default_rng(seed)
        draws = []
        for _ in range(BOOTSTRAP_RESAMPLES):
            ib, ih = rng.integers(0, len(db), len(db)), rng.integers(0, len(dh), len(dh))
            xx = np.concatenate([xb[ib], xh[ih]])
            if np.ptp(xx[: len(db)]) == 0 and np.ptp(xx[len(db):]) == 0:
                continue
            c, _, _ = ols(np.concatenate([db[ib], dh[ih]]), xx, side)
            draws.append(c[1])
        lo, hi = np.percentile(draws, [2.5, 97.5])
        low, high = math.exp(lo), math.exp(hi)
        method = f"bootstrap 95% over each side's processes ({len(db)} + {len(dh)}), refitted"
    else:
        half = t975(df) * se
        low, high = math.exp(effect - half), math.exp(effect + half)
        method = f"Student t 95% from the fit ({len(db)} + {len(dh)} processes, {df} degrees of freedom)"
    return made(math.exp(effect), low, high, method, True, slope, sd, se, df, float(coef[0] + slope * x.mean()))


def per_process(case_rounds: list, anchor_rounds: list, how: str = "mean") -> tuple[np.ndarray, np.ndarray]:
    """Each process's log(case / anchor) and log(anchor) from its rounds (one list of us per call per process,
    the cases' loops interleaved): how="mean" (of the per-round logs: the estimator chosen) or "median" (of
    each case's loops, as the rest of flametool pools). Processes with no loops or a non-positive figure are left out."""
    ys, xs = [], []
    for c, a in zip(case_rounds, anchor_rounds):
        n = min(len(c), len(a))
        if n == 0:
            continue
        c, a = np.asarray(c[:n], float), np.asarray(a[:n], float)
        if np.any(c <= 0) or np.any(a <= 0):
            continue
        if how == "mean":
            ys.append(float(np.mean(np.log(c) - np.log(a))))
            xs.append(float(np.mean(np.log(a))))
        else:
            ys.append(math.log(float(np.median(c)) / float(np.median(a))))
            xs.append(math.log(float(np.median(a))))
    return np.array(ys), np.array(xs)
