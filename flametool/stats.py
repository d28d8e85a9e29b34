"""Figures from timed loops, with intervals a reader can trust on a noisy host.

A fresh process on a shared host runs the same loop at a speed of its own and keeps it (on the H200,
cupy.matmul at 1024^3 read 17 to 29 us per call across processes), while two cases alternated inside one
process keep their ratio within a few percent: the process's speed multiplies both alike. So:

- a case's figure is the median of all its loops, with a 95% bootstrap interval that resamples whole
  processes (the unit that varies), or the loops when there is only one process;
- a pair of cases timed in the same processes (paired) is compared within each process first: the
  ratio and the difference of the two cases' medians in that process; those are pooled over processes
  (geometric mean of the ratios, mean of the differences) with a Student t 95% interval over processes.
  With one process, the rounds of that process (one loop of each case per round) are the units;
- a pair timed in different processes (isolated) can only be compared as the ratio of the two pooled
  medians, with a bootstrap interval that resamples each side's processes independently.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

import numpy as np

from .record import Timing

CONFIDENCE = 0.95
BOOTSTRAP_RESAMPLES = 2000
# A ratio whose interval reaches further than this from its estimate is called wide, with what to do.
WIDE = 0.05

# Student t, two-sided 95%, by degrees of freedom; between rows the smaller df (the wider interval) is used.
T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228,
        11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 16: 2.120, 17: 2.110, 18: 2.101, 19: 2.093,
        20: 2.086, 25: 2.060, 30: 2.042, 40: 2.021, 60: 2.000, 120: 1.980}


def t975(df: int) -> float:
    if df < 1:
        raise ValueError("t quantile needs at least one degree of freedom")
    usable = [d for d in T975 if d <= df]
    return T975[max(usable)] if df < 1000 else 1.960


@dataclass
class Interval:
    low: float
    high: float
    method: str  # how it was made, in words for the report


def mean_interval(values: list[float], units: str) -> Interval | None:
    """Student t 95% interval of the mean of `values` (None with fewer than two)."""
    if len(values) < 2:
        return None
    mean = statistics.fmean(values)
    half = t975(len(values) - 1) * statistics.stdev(values) / math.sqrt(len(values))
    return Interval(mean - half, mean + half, f"Student t 95% over {len(values)} {units}")


def _percentiles(values: list[float]) -> tuple[float, float]:
    values = sorted(values)
    tail = (1 - CONFIDENCE) / 2
    lo = values[int(math.floor(tail * (len(values) - 1)))]
    hi = values[int(math.ceil((1 - tail) * (len(values) - 1)))]
    return float(lo), float(hi)


def groups_of(timing: Timing, metric: str = "cpu_us") -> tuple[list[list[float]], str]:
    """The units to resample: each process's loops, or each loop when there is one process."""
    procs = [p.figures(metric) for p in timing.processes if p.figures(metric)]
    if len(procs) >= 2:
        return procs, "processes"
    return [[v] for v in (procs[0] if procs else [])], "loops of one process"


def bootstrap_medians(groups: list[list[float]], rng: np.random.Generator) -> np.ndarray:
    """The pooled median of BOOTSTRAP_RESAMPLES resamples of `groups` (drawn with replacement, all of each
    group's values kept together). numpy: a run holds thousands of loops, and this runs per case and pair.

    A resample is a multiset of the values, each group's as many times as it was drawn, so its median is
    read off the values sorted once: for every resample at once, a binary search over the sorted values for
    the middle one(s), counting each group's values below a position times its copies. The same draws as
    a median of each concatenated resample, and the same figures to the bit (np.median's (a + b) / 2)."""
    arrays = [np.asarray(g, dtype=float) for g in groups]
    picks = rng.integers(0, len(arrays), size=(BOOTSTRAP_RESAMPLES, len(arrays)))
    values = np.concatenate(arrays)
    order = np.argsort(values, kind="stable")
    values = values[order]
    owner = np.repeat(np.arange(len(arrays)), [len(a) for a in arrays])[order]
    copies = np.zeros((BOOTSTRAP_RESAMPLES, len(arrays)), dtype=np.int64)
    np.add.at(copies, (np.arange(BOOTSTRAP_RESAMPLES)[:, None], picks), 1)
    # below[g, j]: values of group g among the first j + 1 sorted values
    below = np.cumsum(owner[None, :] == np.arange(len(arrays))[:, None], axis=1)
    sizes = copies @ below[:, -1]

    def kth(k: np.ndarray) -> np.ndarray:
        """Each resample's k-th smallest value (0-based): the first position with more than k values at or below it."""
        lo = np.zeros(len(k), dtype=np.int64)
        hi = np.full(len(k), len(values) - 1, dtype=np.int64)
        while np.any(lo < hi):
            mid = (lo + hi) // 2
            up = np.einsum("rg,gr->r", copies, below[:, mid]) > k
            hi, lo = np.where(up, mid, hi), np.where(up, lo, mid + 1)
        return values[lo]

    low, high = kth((sizes - 1) // 2), kth(sizes // 2)
    return np.where(sizes % 2 == 1, low, (low + high) / 2)


def case_interval(timing: Timing, seed: int = 0, metric: str = "cpu_us") -> Interval | None:
    """95% bootstrap interval of a case's median time per call, resampling processes (or loops)."""
    groups, units = groups_of(timing, metric)
    if len(groups) < 2:
        return None
    lo, hi = _percentiles(list(bootstrap_medians(groups, np.random.default_rng(seed))))
    return Interval(lo, hi, f"bootstrap 95% over {len(groups)} {units}")


@dataclass
class PairFigures:
    """head against base: ratio (head / base) and difference (head - base, us per call), with intervals."""

    base: str
    head: str
    paired: bool
    ratio: float | None
    ratio_interval: Interval | None
    diff_us: float | None
    diff_interval: Interval | None
    units: int  # processes (or rounds) pooled
    unit_name: str  # what `units` counts: "processes", "rounds of one process", ...
    per_process_ratio: list[float]
    per_process_diff_us: list[float]
    method: str

    @property
    def reach(self) -> float | None:
        """How far the ratio's interval reaches from the ratio, relative (0.02: ±2%); None without one."""
        if self.ratio is None or self.ratio_interval is None:
            return None
        return max(self.ratio_interval.high / self.ratio - 1, 1 - self.ratio_interval.low / self.ratio)

    def reach_with(self, units: int) -> float | None:
        """The reach the ratio's interval would have over `units` processes (or rounds) that spread as these
        do: the Student t half-width of the mean log ratio at this standard deviation. None with fewer than
        two units to read a spread from."""
        logs = [math.log(r) for r in self.per_process_ratio if r > 0]
        if len(logs) < 2 or units < 2:
            return None
        return math.exp(t975(units - 1) * statistics.stdev(logs) / math.sqrt(units)) - 1

    @property
    def wide(self) -> bool:
        """The ratio's interval reaches more than WIDE from the ratio (or there is none)."""
        return self.reach is None or self.reach > WIDE


# The most processes advice may name (cli's limit on --processes)
MAX_ADVISED_PROCESSES = 100


def processes_for(f: PairFigures, target: float = WIDE) -> int | None:
    """How many processes would bring the ratio's interval within ±target, at the spread between the processes
    that ran: the half-width on the log scale shrinks as t(n-1)/sqrt(n). None when that is more than
    MAX_ADVISED_PROCESSES (more processes would not settle it) or the figures were not pooled over processes."""
    if f.reach is None or f.unit_name != "processes" or f.units < 2:
        return None
    now = math.log1p(f.reach) / (t975(f.units - 1) / math.sqrt(f.units))
    for n in range(f.units + 1, MAX_ADVISED_PROCESSES + 1):
        if now * t975(n - 1) / math.sqrt(n) <= math.log1p(target):
            return n
    return None


def pair(base_label: str, base: Timing, head_label: str, head: Timing, paired: bool, seed: int = 0,
         metric: str = "cpu_us") -> PairFigures:
    """head against base in one kind of figure (host time per call by default; a sweep compares wall time too)."""
    if paired:
        return _paired(base_label, base, head_label, head, metric)
    return _unpaired(base_label, base, head_label, head, seed, metric)


def _paired(bl: str, base: Timing, hl: str, head: Timing, metric: str) -> PairFigures:
    procs = [(b.figures(metric), h.figures(metric)) for b, h in zip(base.processes, head.processes)
             if b.figures(metric) and h.figures(metric)]
    ratios = [statistics.median(h) / statistics.median(b) for b, h in procs if statistics.median(b) > 0]
    diffs = [statistics.median(h) - statistics.median(b) for b, h in procs]
    if len(procs) >= 2:
        units, logs, ds, what = len(procs), [math.log(r) for r in ratios], diffs, "processes"
    else:  # one process: its rounds (one loop of each case per round, interleaved) are the units
        b, h = procs[0] if procs else ([], [])
        rounds = [(x, y) for x, y in zip(b, h) if x > 0]
        units, what = len(rounds), "rounds of one process" if len(rounds) != 1 else "round of one process"
        logs = [math.log(y / x) for x, y in rounds]
        ds = [y - x for x, y in rounds]
    if not ratios:
        return PairFigures(bl, hl, True, None, None, None, None, 0, "processes", [], [], "no loops to compare")
    # the estimate is the centre of its interval: the mean over the units pooled (of log ratios)
    ratio = math.exp(statistics.fmean(logs)) if logs else ratios[0]
    diff = statistics.fmean(ds) if ds else diffs[0]
    li = mean_interval(logs, what)
    di = mean_interval(ds, what)
    ratio_iv = Interval(math.exp(li.low), math.exp(li.high), li.method) if li else None
    return PairFigures(bl, hl, True, ratio, ratio_iv, diff, di, units, what, ratios, diffs,
                       f"paired: both cases in the same {len(procs)} process(es), loops interleaved; ratio and "
                       f"difference taken within each process, then pooled over {units} {what} "
                       "(geometric mean of ratios, mean of differences) with a Student t 95% interval")


def _unpaired(bl: str, base: Timing, hl: str, head: Timing, seed: int, metric: str) -> PairFigures:
    mb, mh = base.median(metric), head.median(metric)
    if not mb or mh is None:
        return PairFigures(bl, hl, False, None, None, None, None, 0, "processes", [], [], "no loops to compare")
    gb, ub = groups_of(base, metric)
    gh, uh = groups_of(head, metric)
    ratio_iv = diff_iv = None
    if len(gb) >= 2 and len(gh) >= 2:
        rng = np.random.default_rng(seed)
        b, h = bootstrap_medians(gb, rng), bootstrap_medians(gh, rng)
        ratios = [y / x if x else math.inf for x, y in zip(b, h)]
        diffs = list(h - b)
        method = f"bootstrap 95%, each side's {ub} / {uh} resampled independently"
        ratio_iv, diff_iv = Interval(*_percentiles(ratios), method), Interval(*_percentiles(diffs), method)
    return PairFigures(bl, hl, False, mh / mb, ratio_iv, mh - mb, diff_iv, min(len(gb), len(gh)), ub, [], [],
                       "isolated: each case in processes of its own, so a process's own speed is not cancelled; "
                       "ratio and difference of the pooled medians")
