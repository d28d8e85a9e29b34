"""The analysis of a sweep run, a pure function of its run.json like compare.analyse: per case, its host, GPU
and wall time per call at each size and whether the host set the pace; the size where each case's GPU time
overtakes its host time (its crossover: below it, launch cost is what a program feels); per compared pair,
the wall-time ratio at each size, paired as compare pairs it, and how much of the slower case's wall time
is host time the other case does not spend.

A size is put on one axis as the cube root of M·K·N, so squares and M,K,N triples share a plot; between two
measured sizes the figures are read on a log-log scale, on which the curves are close to straight. A size
between two measured ones is said as a number on that axis for an op, and as the shape there for a workload
(size_at): its figures are its FUNC's own, which no number on the axis names.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import TypeVar
from pathlib import Path

from . import attribution, countdiff
from ..run import casenames, stats
from ..run.counts import Counts
from .operands import NewOutputs, UnlikeOperands, new_outputs, unlike_operands, wrote_operands
from ..run.record import Run, SweepPoint, size_name  # noqa: F401 - sweep.size_name
from ..run.timing import HOST_BOUND_FACTOR, Timing, host_bound
from ..workload.ops import OPS


def edge(shape: list[int]) -> float:
    """The side of the cube with a shape's number of multiply-adds: one axis for squares and triples; the
    number of elements for the other ops' shapes (N, or R,C)."""
    return (shape[0] * shape[1] * shape[2]) ** (1 / 3) if len(shape) == 3 else float(math.prod(shape))


def size_at(size: float, low: list[int], high: list[int], op: str) -> str:
    """A size between the measured shapes `low` and `high` (a crossing's, a crossover's: edge's scale), as the
    sentences say it: the number on the axis for an op (matmul's N, an op's elements), and for a workload (`op`
    its name) its shape there, each figure read off the same log scale between low's and high's (92x1024x1024
    where the axis reads 459, between 64x1024x1024 and 128x1024x1024), since the axis's number (the cube root of
    a triple's product, the product of a pair's) is none of its FUNC's dimensions."""
    span = math.log(edge(high) / edge(low)) if len(low) == len(high) else 0.0
    if op in OPS or not span:
        return f"{size:,.0f}"
    t = math.log(size / edge(low)) / span
    return "x".join(str(round(a * (b / a) ** t)) for a, b in zip(low, high))


@dataclass
class SizePoint:
    """One case at one size."""

    shape: list[int]
    size: float  # edge(shape)
    cpu_us: float | None = None
    gpu_us: float | None = None
    wall_us: float | None = None
    cpu_interval: stats.Interval | None = None
    wall_interval: stats.Interval | None = None
    host_bound: bool | None = None
    processes: int = 0
    error: str | None = None


# A case's figures at a size, each as compare gives a case's time per call (stats.pooled)
METRICS = ("cpu_us", "wall_us", "gpu_us")
Figures = dict[str, stats.Pooled]  # metric -> the case's pooled time per call in it (a metric it has loops of)


def pooled_at_size(timings: dict[str, Timing], paired: bool) -> dict[str, Figures]:
    """label -> its figures at one size: pooled over the processes at the median process's speed with the other
    cases of its group there (`paired`: timed in the same processes), or alone. These are what export and diff
    read of CASE@SIZE (casenames: a size of a case is a case of that size's group), so every view of a sweep
    gives one figure, and two cases' figures stand in their paired ratio (the medians of every loop mix the
    processes' speeds: a CPU sweep's table read numpy 10.12 us where export read 15.91)."""
    out: dict[str, Figures] = {l: {} for l in timings}
    for group in ([timings] if paired else [{l: t} for l, t in timings.items()]):
        for metric in METRICS:
            for label, figure in stats.pooled(group, metric, intervals=metric != "gpu_us").items():
                out[label][metric] = figure
    return out


def point(timing: SweepPoint, figures: Figures | None = None) -> SizePoint:
    """A case at one size; `figures`: its pooled figures there (pooled_at_size), by default pooled alone."""
    p = SizePoint(list(timing.shape), edge(timing.shape), error=timing.error)
    if not timing.cpu_loops:
        return p
    figures = pooled_at_size({"": timing}, False)[""] if figures is None else figures
    cpu, wall, gpu = (figures.get(m) for m in METRICS)
    if cpu is None:  # no loop with a time above 0
        return p
    p.cpu_us, p.cpu_interval = cpu.us, cpu.interval
    p.wall_us, p.wall_interval = (wall.us, wall.interval) if wall is not None else (None, None)
    p.gpu_us = gpu.us if gpu is not None else None
    p.host_bound = host_bound(timing)
    p.processes = len([x for x in timing.processes if x.cpu_us])
    return p


@dataclass
class Crossing:
    """Where a quantity that changes with size passes through zero, between two measured sizes."""

    size: float  # interpolated on a log scale
    low: list[int]  # the measured shapes on either side
    high: list[int]
    rising: bool  # from <= 0 below to > 0 above


def crossings(shapes: list[list[int]], values: list[float]) -> list[Crossing]:
    """Every sign change of `values` (one per shape, in order of size) between neighbouring sizes, with the
    size where the straight line between the two points on log(size) crosses zero. A value of exactly zero
    counts as below (<= 0), so a run of zeros is one crossing, not two."""
    out = []
    for (s0, v0), (s1, v1) in zip(zip(shapes, values), zip(shapes[1:], values[1:])):
        if (v0 <= 0) == (v1 <= 0):
            continue
        x0, x1 = math.log(edge(s0)), math.log(edge(s1))
        x = x0 + (x1 - x0) * (0 - v0) / (v1 - v0) if v1 != v0 else x0
        out.append(Crossing(math.exp(x), s0, s1, v1 > 0))
    return out


@dataclass
class Crossover:
    """A case's crossover: the size from which the GPU's own time per call exceeds the host's launch time."""

    size: float | None  # None: no crossing within the sizes swept
    text: str
    flips: int = 0  # how many times the case changes between host- and GPU-bound (more than one: noise)
    us: float | None = None  # the host (and GPU) time per call there


def crossover(points: list[SizePoint], op: str) -> Crossover:
    """Where the GPU's own time per call overtakes the host's, between the largest host-bound size and the
    GPU-bound size above it (host-bound as compare calls it: GPU time within timing.HOST_BOUND_FACTOR of host
    time).

    CUDA events time the GPU's own work only where it is GPU-bound: at a host-bound size they time it waiting
    for each launch, so its GPU time there is the host's. So the GPU's time below the first GPU-bound size is
    read off the straight log-log line through the first two GPU-bound sizes, and the crossover is where
    that line meets the host's (straight between its two measured neighbours). With one GPU-bound size only,
    it is where GPU/host time reaches the host-bound factor, on the same scale. `op`: the run's, which names
    the sizes (record.size_name)."""
    usable = [p for p in points if p.cpu_us and p.gpu_us]
    if not any(p.cpu_us for p in points):  # failed (or not run) at every size: its failures say why
        return Crossover(None, "not measured at any size")
    if not usable:
        return Crossover(None, "no GPU time measured (a CPU run): the host does all the work at every size")
    host = [bool(p.host_bound) for p in usable]
    flips = sum(a != b for a, b in zip(host, host[1:]))
    if not any(host):
        return Crossover(None, "GPU-bound at every size swept: the crossover is below "
                         + size_name(usable[0].shape, op))
    if host[-1]:
        where = "at every size swept" if all(host) else f"again at the largest size ({size_name(usable[-1].shape, op)})"
        return Crossover(None, f"host-bound {where}: the crossover is above {size_name(usable[-1].shape, op)}", flips)
    # the last change from host- to GPU-bound: from there on the GPU stays behind within the sweep
    i = max(j for j in range(len(usable) - 1) if host[j] and not host[j + 1])
    lo, hi = usable[i], usable[i + 1]
    assert lo.cpu_us and lo.gpu_us and hi.cpu_us and hi.gpu_us  # usable: both measured
    after = usable[i + 2] if i + 2 < len(usable) else None
    if after is not None:
        assert after.gpu_us  # usable
        slope = math.log(after.gpu_us / hi.gpu_us) / math.log(after.size / hi.size)
        own_lo = math.log(hi.gpu_us) - slope * math.log(hi.size / lo.size)
        low, high = own_lo - math.log(lo.cpu_us), math.log(hi.gpu_us / hi.cpu_us)
    else:
        factor = math.log(HOST_BOUND_FACTOR)
        low, high = math.log(lo.gpu_us / lo.cpu_us) - factor, math.log(hi.gpu_us / hi.cpu_us) - factor
    found = crossings([lo.shape, hi.shape], [min(low, 0.0), high])  # at lo, at the latest, should noise say earlier
    at = found[0].size if found else hi.size
    t = math.log(at / lo.size) / math.log(hi.size / lo.size)
    us = math.exp(math.log(lo.cpu_us) + t * math.log(hi.cpu_us / lo.cpu_us))
    text = (f"GPU time overtakes host time at about {size_at(at, lo.shape, hi.shape, op)} (between {size_name(lo.shape, op)}, host-bound, and "
            f"{size_name(hi.shape, op)}, GPU-bound), at {us:,.1f} us per call: below it launch cost sets the pace")
    if flips > 1:
        text += f"; it changes between host- and GPU-bound {flips} times, so sizes near it are within the noise"
    return Crossover(at, text, flips, us)


@dataclass
class PairPoint:
    """A compared pair at one size: head against base."""

    shape: list[int]
    size: float
    wall: stats.PairFigures | None  # the wall-time ratio and difference (what a program feels)
    host: stats.PairFigures | None  # the host-time difference
    slower: str | None = None  # the case the paired wall ratio says is slower (by the medians where it is even)
    extra_host_us: float | None = None  # the slower case's host time per call beyond the faster's
    share: float | None = None  # of the slower case's wall time, the extra host time that shows in it


def pair_point(base: str, bt: Timing, head: str, ht: Timing, paired: bool,
               figures: dict[str, Figures] | None = None) -> PairPoint:
    """head against base at one size; `figures`: each one's pooled figures there (pooled_at_size of its group),
    by default pooled over the two. The difference is at the base's pooled time, as compare's is."""
    p = PairPoint(list(bt.shape), edge(bt.shape), None, None)
    if not (bt.cpu_loops and ht.cpu_loops):
        return p
    figures = figures or pooled_at_size({base: bt, head: ht}, paired)
    fb, fh = figures.get(base, {}), figures.get(head, {})
    if "cpu_us" not in fb or "cpu_us" not in fh:
        return p
    p.host = stats.pair(base, bt, head, ht, paired, base_us=fb["cpu_us"].us)
    if "wall_us" not in fb or "wall_us" not in fh:
        return p
    p.wall = stats.pair(base, bt, head, ht, paired, metric="wall_us", base_us=fb["wall_us"].us)
    # which case is slower: the side of the paired wall ratio, the figure the row leads with; by the pooled wall
    # times only where there is no ratio or it is even (paired, they stand in its ratio: the same side). By how
    # much host time, and what share of its wall time shows it: from the two cases' pooled figures, the ones
    # the tables show
    host = {base: fb["cpu_us"].us, head: fh["cpu_us"].us}
    wall = {base: fb["wall_us"].us, head: fh["wall_us"].us}
    ratio = p.wall.ratio
    head_slower = ratio > 1 if ratio is not None and ratio != 1 else wall[head] > wall[base]
    slower, faster = (head, base) if head_slower else (base, head)
    p.slower = slower
    p.extra_host_us = host[slower] - host[faster]
    # extra host time shows in the wall time only as far as the wall time grew: at a GPU-bound size the
    # launch queue hides it, and a wall-time gap larger than the host's is the GPU's, not the launch's
    visible = max(0.0, min(p.extra_host_us, wall[slower] - wall[faster]))
    p.share = visible / wall[slower] if wall[slower] else None
    return p


# A ratio whose 95% interval reaches further than this from it (42x, 95%: 1.6 to 1135) says nothing about the
# ratio: such a size is said to be inconclusive, not read as a finding.
INCONCLUSIVE = 0.5
# A paired ratio moves by about this much between runs of one build (H200: torch/cupy 0.645-0.658 in runs
# minutes apart; paired_repro max/min 1.012), which no interval within one run covers: a size whose interval
# stays within it of 1 is "the same", and a crossing is claimed only between sizes whose intervals are beyond it.
SAME_WITHIN = 0.02


def side(p: PairPoint) -> int | None:
    """Which case the wall-time interval says is faster at p: +1 the base (head / base above 1 + SAME_WITHIN
    with its whole interval), -1 the head (below 1 / (1 + SAME_WITHIN)), 0 neither (the same, or no interval),
    None inconclusive (the interval reaches further than INCONCLUSIVE from the ratio)."""
    w = p.wall
    if w is None or w.ratio is None:
        return None
    iv = w.ratio_interval
    if iv is None:
        return 0
    if w.reach is not None and w.reach > INCONCLUSIVE:
        return None
    return 1 if iv.low > 1 + SAME_WITHIN else -1 if iv.high < 1 / (1 + SAME_WITHIN) else 0


@dataclass
class Stretch:
    """Neighbouring sizes with one verdict: side() of each (+1 base faster, -1 head faster, 0 the same)."""

    side: int
    low: list[int]
    high: list[int]
    ratio_low: float  # the lowest and highest any of their intervals reach (the ratio where none)
    ratio_high: float
    first: bool  # from the smallest conclusive size
    last: bool  # to the largest

    @property
    def reach(self) -> float:
        """How far from 1 the intervals reach, relative (0.045: ±4.5%)."""
        return max(self.ratio_high - 1, 1 - self.ratio_low, 0.0)


def verdicts(points: list[PairPoint]) -> tuple[list[Crossing], list[Stretch], list[PairPoint]]:
    """The sizes where the wall-time ratio crosses 1 (only between neighbouring sizes whose intervals are beyond
    SAME_WITHIN on either side), the stretches of sizes with one verdict, and the inconclusive sizes."""
    measured = [p for p in points if p.wall is not None and p.wall.ratio]
    inconclusive = [p for p in measured if side(p) is None]
    usable = [p for p in measured if side(p) is not None]
    even: list[Crossing] = []
    stretches: list[Stretch] = []
    for i, p in enumerate(usable):
        assert p.wall is not None and p.wall.ratio is not None  # measured
        verdict = side(p)
        assert verdict is not None  # usable
        iv = p.wall.ratio_interval
        low, high = (iv.low, iv.high) if iv else (p.wall.ratio, p.wall.ratio)
        if stretches and stretches[-1].side == verdict:
            s = stretches[-1]
            s.high, s.ratio_low, s.ratio_high = p.shape, min(s.ratio_low, low), max(s.ratio_high, high)
        else:
            if stretches and stretches[-1].side == -verdict != 0:
                q = usable[i - 1]
                assert q.wall is not None and q.wall.ratio is not None  # measured
                even += crossings([q.shape, p.shape], [math.log(q.wall.ratio), math.log(p.wall.ratio)])
            stretches.append(Stretch(verdict, p.shape, p.shape, low, high, i == 0, False))
    if stretches:
        stretches[-1].last = True
    return even, stretches, inconclusive


@dataclass
class SweepPair:
    base: str
    head: str
    paired: bool
    points: list[PairPoint]
    even: list[Crossing] = field(default_factory=list)  # sizes where the wall-time ratio crosses 1, intervals apart
    stretches: list[Stretch] = field(default_factory=list)  # neighbouring sizes with one verdict
    inconclusive: list[PairPoint] = field(default_factory=list)  # sizes whose interval is too wide to say

    _index: dict[tuple, PairPoint] | None = field(default=None, repr=False, compare=False)

    def at(self, shape: list[int]) -> PairPoint | None:
        """The pair's point at `shape` (looked up, not searched: a table of every size asks for each)."""
        if self._index is None:
            self._index = by_shape(self.points)
        return self._index.get(tuple(shape))


@dataclass
class SweepAnalysis:
    run_dir: Path
    run: Run
    curves: dict[str, list[SizePoint]] = field(default_factory=dict)  # label -> its points, in the order swept
    crossovers: dict[str, Crossover] = field(default_factory=dict)
    pairs: list[SweepPair] = field(default_factory=list)
    # --sample: size name (size_name) -> label -> the case's attribution there
    layers: dict[str, dict[str, attribution.CaseCosts]] = field(default_factory=dict)
    # --sample: the sizes a case was profiled at that have no layers, and why ("py-spy kept no samples inside
    # step()"), as compare says "no stack analysis" of a case: (size name, label, reason)
    unanalysed: list[tuple[str, str, str]] = field(default_factory=list)
    # --sample with counting: size name -> label -> what one step() did there, counted (corrupted counts left out)
    counts: dict[str, dict[str, Counts]] = field(default_factory=dict)
    # and each pair's difference at each size both sides were counted at: (size name, head - base)
    count_diffs: list[tuple[str, countdiff.CountDiff]] = field(default_factory=list)
    unlike: list[UnlikeOperands] = field(default_factory=list)  # shapes at which the cases multiply other values
    new_outputs: NewOutputs | None = None  # jax's new output buffer each call beside cases that write into out
    rewritten: list[str] = field(default_factory=list)  # cases whose step wrote the values it reads (a += b)
    # compare's callers off the CPU (compare.OffCpu): a sweep has none, its loops at each size are not read so
    off_cpu: list = field(default_factory=list)

    _index: dict[str, dict[tuple, SizePoint]] = field(default_factory=dict, repr=False, compare=False)  # label -> by_shape of its curve

    def size_name(self, shape: list[int]) -> str:
        """A size as this run names it (record.size_name of the run's op)."""
        return size_name(shape, self.run.config.operation)

    def at(self, label: str, shape: list[int]) -> SizePoint | None:
        """The case's point at `shape`, whatever order its points are in (a run.json made or edited elsewhere
        need not keep config.sizes' order: a point is never read by its position)."""
        if label not in self._index:
            self._index[label] = by_shape(self.curves.get(label, []))
        return self._index[label].get(tuple(shape))

    @property
    def on_gpu(self) -> bool:
        """Some case has GPU times (CUDA events): a CPU sweep has none, and is worded for the CPU."""
        return any(p.gpu_us is not None for points in self.curves.values() for p in points)

    @property
    def shapes(self) -> list[list[int]]:
        sizes = self.run.config.sizes
        if isinstance(sizes, list) and sizes:
            return sizes
        return next((([p.shape for p in c]) for c in self.curves.values() if c), [])


Shaped = TypeVar("Shaped", SizePoint, PairPoint)


def by_shape(points: list[Shaped]) -> dict[tuple, Shaped]:
    """shape -> point (the first with it)."""
    index: dict[tuple, Shaped] = {}
    for p in points:
        index.setdefault(tuple(p.shape), p)
    return index


def analyse(run_dir: Path, run: Run) -> SweepAnalysis:
    """Every case's points and crossover, the layers at each sampled size, every compared pair per size."""
    out = SweepAnalysis(run_dir, run, unlike=unlike_operands(run), new_outputs=new_outputs(run), rewritten=wrote_operands(run))
    figures = _pooled(run)
    for label, result in run.results.items():
        out.curves[label] = [point(t, figures.get((label, tuple(t.shape)))) for t in result.points]
        out.crossovers[label] = crossover(out.curves[label], run.config.operation)
        for t in result.points:
            if t.profile is None:
                continue
            # a sampled size reads as a result of its own: its timed loops, its profiled process
            alone = dataclasses.replace(result, timing=t, sample_timing=None, profile=t.profile, error=t.error,
                                        sample_shape=t.shape)
            reason = attribution.skip_reason(alone, run)
            if reason is None:
                name = out.size_name(t.shape)
                stem = casenames.sized(label, t.shape, run.config.operation)
                # scaled by the figure the tables show and export reads of LABEL@SIZE (the pooled one), not the
                # median of every loop, so the layers sum to the host time printed beside them
                pooled = figures.get((label, tuple(t.shape)), {}).get("cpu_us")
                profile = attribution.profile_of(run_dir, alone, stem, us_per_call=pooled.us if pooled else None)
                out.layers.setdefault(name, {})[label] = attribution.attribute(profile)
            elif not t.error:  # a failed size is said as failed
                out.unanalysed.append((out.size_name(t.shape), label, reason))
            if t.profile.counts is not None and not t.profile.counts.corrupted:
                out.counts.setdefault(out.size_name(t.shape), {})[label] = t.profile.counts
    for base, head in run.pairs:
        together = run.paired(base, head)
        rb, rh = run.results[base], run.results[head]
        # matched by shape, not position: one case's points may be in another order than the other's
        at_head = {tuple(ht.shape): ht for ht in reversed(rh.points)}
        points = [pair_point(base, bt, head, at_head[tuple(bt.shape)], together,
                             {l: figures.get((l, tuple(bt.shape)), {}) for l in (base, head)})
                  for bt in rb.points if tuple(bt.shape) in at_head]
        out.pairs.append(SweepPair(base, head, together, points, *verdicts(points)))
        for shape in out.shapes:  # in the sweep's order of sizes
            counted = out.counts.get(out.size_name(shape), {})
            if base in counted and head in counted:
                d = countdiff.diff_counts(counted[base], counted[head], base, head)
                if d is not None:
                    out.count_diffs.append((out.size_name(shape), d))
    return out


def _pooled(run: Run) -> dict[tuple[str, tuple[int, ...]], Figures]:
    """(label, shape) -> the case's figures at that size: those of LABEL@SIZE in casenames' view of the sweep, each
    pooled with the other cases of its group there by stats.group_pooled, as export and diff read them."""
    view = casenames.as_cases(run)
    by_metric = {m: stats.group_pooled(view, False, intervals=m != "gpu_us", metric=m) for m in METRICS}
    out: dict[tuple[str, tuple[int, ...]], Figures] = {}
    for label, result in run.results.items():
        for t in result.points:
            name = casenames.sized(label, t.shape, run.config.operation)
            figures = {m: got[name] for m, got in by_metric.items() if name in got}
            if figures:
                out.setdefault((label, tuple(t.shape)), figures)
    return out
