"""Figures from timed loops, with intervals a reader can trust on a noisy host.

A fresh process on a shared host runs the same loop at a speed of its own and keeps it (on the H200,
cupy.matmul at 1024^3 read 17 to 29 us per call across processes), while two cases alternated inside one
process keep their ratio within a few percent: the process's speed multiplies both alike. So:

- a case's figure (``pooled``, below) has a 95% bootstrap interval that resamples whole processes (the unit
  that varies), or the rounds when there is only one process;
- a pair of cases timed in the same processes (paired) is compared within each process first: the
  ratio of the two cases' medians in that process; those are pooled over processes (geometric mean of the
  ratios) with a Student t 95% interval over processes. With one process, the rounds of that process (one
  loop of each case per round) are the units;
- one number everywhere (``pooled``): a case's time per call is pooled over the processes of its group at
  the median process's speed (the median of the processes' levels, each the geometric mean of the group's
  cases in it), times the case's mean log offset from that level. Two cases' pooled times then stand exactly
  in their paired ratio, and a pair's difference is the base's pooled time times (ratio - 1), its interval
  likewise: the difference says what the ratio says, and one slow process (it multiplies every case in it
  alike) moves neither. The mean of per-process differences it replaces read +17.83 us (-7.35 to +43.01) on
  the CPU where the ratio's interval excluded 1;
- a pair timed in different processes (isolated, or two environments) can only be compared as the ratio of
  the two pooled times, with a bootstrap interval that resamples each side's processes independently;
- anchored (anchoring.py): a case in two sets of processes (two environments of one run, or two runs), each
  set also timing an anchor case in the same processes: the ratio of the case/anchor ratios, with a Welch t
  95% interval, and its difference at the pair's common speed (the speed of both sides' processes, as the
  anchor reads it). A process's (and a run's) host speed multiplies case and anchor alike, so it cancels; the
  absolute figures, which carry it, are given beside. The anchor does not cancel all of it: the case/anchor
  ratio is not the same at the host's two speeds (cupy/torch about 4% higher in slow processes on the H200), so
  with two or more processes a side the ratio and its interval are speedfit's: each process's log ratio fitted
  on its anchor's log time, the slope shared by both sides (Anchored.speed says what the adjustment did).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import cast

import numpy as np

from .record import Run
from .timing import Timing

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


def reach_of(ratio: float | None, interval: Interval | None) -> float | None:
    """How far a ratio's interval reaches from the ratio, relative (0.02: ±2%); None without one."""
    if ratio is None or interval is None:
        return None
    return max(interval.high / ratio - 1, 1 - interval.low / ratio)


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
    base_us: float | None = None  # the base's pooled time: the difference is base_us * (ratio - 1)
    # made with the figures (reach_of), so that a view reads them rather than asks: how far the ratio's interval
    # reaches from the ratio, relative (0.02: ±2%; None without one), and whether that is more than WIDE
    reach: float | None = field(init=False, repr=False)
    wide: bool = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.reach = reach_of(self.ratio, self.ratio_interval)
        self.wide = self.reach is None or self.reach > WIDE

    def reach_with(self, units: int) -> float | None:
        """The reach the ratio's interval would have over `units` processes (or rounds) that spread as these
        do: the Student t half-width of the mean log ratio at this standard deviation. None with fewer than
        two units to read a spread from."""
        logs = [math.log(r) for r in self.per_process_ratio if r > 0]
        if len(logs) < 2 or units < 2:
            return None
        return math.exp(t975(units - 1) * statistics.stdev(logs) / math.sqrt(units)) - 1



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


# --- pooled times: one figure per case, the pair's ratio and difference derived from them ----------------

def unit_figures(timings: list[Timing], metric: str = "cpu_us") -> tuple[np.ndarray, str]:
    """Each case's figure per unit (cases x units): its median in each process that all of them have loops in,
    or with fewer than two such processes, its loops of the one process, round by round (zipped to the fewest).
    Units with a figure of 0 are left out (the pooling is on the log scale)."""
    per = [[statistics.median(p.figures(metric)) if p.figures(metric) else 0.0 for p in t.processes] for t in timings]
    n = min((len(x) for x in per), default=0)
    cols = [j for j in range(n) if all(x[j] > 0 for x in per)]
    if len(cols) >= 2:
        return np.array([[x[j] for j in cols] for x in per], dtype=float), "processes"
    j = next((j for j in range(n) if all(t.processes[j].figures(metric) for t in timings)), None)
    if j is None:
        return np.zeros((len(timings), 0)), "processes"
    rows = [t.processes[j].figures(metric) for t in timings]
    units = [r for r in zip(*rows) if all(v > 0 for v in r)]
    values = np.array(units, dtype=float).T if units else np.zeros((len(timings), 0))
    return values, "rounds of one process" if len(units) != 1 else "round of one process"


def pooled_level(values: np.ndarray, picks: np.ndarray | None = None) -> np.ndarray:
    """Pooled times (cases, or cases x resamples with `picks`, resamples x units): the median unit's level (the
    geometric mean over cases in it) times each case's geometric mean ratio to its unit's level. One case alone
    is the median of its units."""
    if values.shape[0] == 1:
        return (np.median(values, axis=1) if picks is None else np.median(values[0][picks], axis=1)[None, :])
    logs = np.log(values)
    level = logs.mean(axis=0)
    offsets = logs - level
    if picks is None:
        return np.exp(np.median(level) + offsets.mean(axis=1))
    return np.exp(np.median(level[picks], axis=1)[None, :] + offsets[:, picks].mean(axis=2))


@dataclass
class Pooled:
    """A case's time per call pooled over its group's processes at the median process's speed."""

    us: float
    interval: Interval | None
    units: int
    unit_name: str


def pooled(timings: dict[str, Timing], metric: str = "cpu_us", seed: int = 0,
           intervals: bool = True) -> dict[str, Pooled]:
    """Each case of a group (cases timed in the same processes; one case alone is a group) at the median
    process's speed, with a 95% bootstrap interval that resamples the units (processes, or rounds) jointly."""
    labels = [l for l, t in timings.items() if t is not None and t.loops(metric)]
    if not labels:
        return {}
    values, unit_name = unit_figures([timings[l] for l in labels], metric)
    n = values.shape[1]
    if n == 0:
        return {}
    point = pooled_level(values)
    ivs: list[Interval | None] = [None] * len(labels)
    if intervals and n >= 2:
        draws = pooled_level(values, np.random.default_rng(seed).integers(0, n, size=(BOOTSTRAP_RESAMPLES, n)))
        method = (f"bootstrap 95% over {n} {unit_name}" + (", at the median process's speed" if len(labels) > 1 else ""))
        ivs = [Interval(*_percentiles(list(draws[i])), method) for i in range(len(labels))]
    return {l: Pooled(float(point[i]), ivs[i], n, unit_name) for i, l in enumerate(labels)}


def group_pooled(run: Run, at_sample: bool, intervals: bool = True, metric: str = "cpu_us") -> dict[str, Pooled]:
    """Every case's pooled time in its group (the cases timed in the same processes, pooled together; a case
    timed alone, by itself), at the requested shape or at the sample shape. A failed case has none."""
    def timing_of(label: str) -> Timing | None:
        r = run.results[label]
        return None if r.error else (r.at_sample_shape if at_sample else r.timing)

    out: dict[str, Pooled] = {}
    for g in run.groups:
        live = {l: timing_of(l) for l in g.cases if l in run.results and timing_of(l) is not None}
        if g.paired and len(live) > 1:
            # none of live's timings is None (filtered above)
            out.update(pooled(cast("dict[str, Timing]", live), metric, intervals=intervals))
    for label in run.results:
        t = timing_of(label)
        if label not in out and t is not None:
            out.update(pooled({label: t}, metric, intervals=intervals))
    return out


def pair(base_label: str, base: Timing, head_label: str, head: Timing, paired: bool, seed: int = 0,
         metric: str = "cpu_us", base_us: float | None = None) -> PairFigures:
    """head against base in one kind of figure (host time per call by default; a sweep compares wall time too).
    `base_us`: the base's pooled time in its whole group (pooled), which the difference is taken at; by
    default pooled over these two cases alone (the ratio is the same either way)."""
    if paired:
        return _paired(base_label, base, head_label, head, metric, base_us)
    return apart(base_label, (base,), head_label, (head,), seed=seed, metric=metric)


def _paired(bl: str, base: Timing, hl: str, head: Timing, metric: str, base_us: float | None) -> PairFigures:
    procs = [(b.figures(metric), h.figures(metric)) for b, h in zip(base.processes, head.processes)
             if b.figures(metric) and h.figures(metric)]
    ratios = [statistics.median(h) / statistics.median(b) for b, h in procs if statistics.median(b) > 0]
    diffs = [statistics.median(h) - statistics.median(b) for b, h in procs]
    values, what = unit_figures([base, head], metric)
    if not ratios or values.shape[1] == 0:
        return PairFigures(bl, hl, True, None, None, None, None, 0, "processes", [], [], "no loops to compare")
    logs = list(np.log(values[1]) - np.log(values[0]))
    units = len(logs)
    # the estimate is the centre of its interval: the mean over the units pooled (of log ratios)
    ratio = math.exp(statistics.fmean(logs))
    li = mean_interval(logs, what)
    ratio_iv = Interval(math.exp(li.low), math.exp(li.high), li.method) if li else None
    if base_us is None:
        base_us = float(pooled_level(values)[0])
    diff, diff_iv = base_us * (ratio - 1), None
    if ratio_iv is not None:
        assert li is not None  # ratio_iv is made from li
        diff_iv = Interval(base_us * (ratio_iv.low - 1), base_us * (ratio_iv.high - 1),
                           f"{li.method}, of the ratio, times {bl}'s pooled {base_us:,.2f} us")
    return PairFigures(bl, hl, True, ratio, ratio_iv, diff, diff_iv, units, what, ratios, diffs,
                       # one sentence for every pair of a run, said once however many pairs there are
                       f"paired: both cases in the same {len(procs)} process{'' if len(procs) == 1 else 'es'}, loops "
                       f"interleaved; ratio taken within each process, then pooled over {units} {what} (geometric "
                       "mean) with a Student t 95% interval; the difference is the base case's pooled time times "
                       "(ratio - 1), so it says what the ratio says", base_us)


def apart(bl: str, base: tuple[Timing, ...], hl: str, head: tuple[Timing, ...], base_us: float | None = None,
          head_us: float | None = None, seed: int = 0, metric: str = "cpu_us") -> PairFigures:
    """Two cases timed in processes of their own (each alone, or each beside others: two environments, two
    runs), head against base, not paired. base[0] and head[0] are the cases; the other timings are the cases
    pooled with them in their processes (pooled). `base_us`, `head_us`: the figures shown for the two (their
    pooled times in their whole groups); by default pooled over the timings given. The 95% interval resamples
    each side's processes independently, each draw scaled to the figure shown, so that the point the views
    show lies where its interval was drawn around (draws of another estimator put +0.44 us outside its own
    interval of +0.51 to +1.98)."""
    vb, ub = unit_figures(list(base), metric)
    vh, uh = unit_figures(list(head), metric)
    if vb.shape[1] == 0 or vh.shape[1] == 0:
        return PairFigures(bl, hl, False, None, None, None, None, 0, "processes", [], [], "no loops to compare")
    own_b, own_h = float(pooled_level(vb)[0]), float(pooled_level(vh)[0])
    base_us = own_b if base_us is None else base_us
    head_us = own_h if head_us is None else head_us
    if not base_us:
        return PairFigures(bl, hl, False, None, None, None, None, 0, "processes", [], [], "no loops to compare")
    ratio_iv = diff_iv = None
    if vb.shape[1] >= 2 and vh.shape[1] >= 2:
        rng = np.random.default_rng(seed)
        b = pooled_level(vb, rng.integers(0, vb.shape[1], size=(BOOTSTRAP_RESAMPLES, vb.shape[1])))[0] * (base_us / own_b)
        h = pooled_level(vh, rng.integers(0, vh.shape[1], size=(BOOTSTRAP_RESAMPLES, vh.shape[1])))[0] * (head_us / own_h)
        method = f"bootstrap 95%, each side's {ub} / {uh} resampled independently"
        ratio_iv, diff_iv = Interval(*_percentiles(list(h / b)), method), Interval(*_percentiles(list(h - b)), method)
    return PairFigures(bl, hl, False, head_us / base_us, ratio_iv, head_us - base_us, diff_iv,
                       min(vb.shape[1], vh.shape[1]), ub if ub == uh else f"{ub} / {uh}", [], [], "isolated: each case in processes of its own, so a "
                       "process's own speed is not cancelled; ratio and difference of the pooled times", base_us)

