"""The analysis of a sweep run, a pure function of its run.json like analysis.analyse: per case, its host, GPU
and wall time per call at each size and whether the host set the pace; the size where each case's GPU time
overtakes its host time (its crossover: below it, launch cost is what a program feels); per compared pair,
the wall-time ratio at each size, paired as compare pairs it, and how much of the slower case's wall time
is host time the other case does not spend.

A size is put on one axis as the cube root of M·K·N, so squares and M,K,N triples share a plot; between two
measured sizes the figures are read on a log-log scale, on which the curves are close to straight.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from . import stats
from .child import classify
from .record import Run, Timing


def edge(shape: list[int]) -> float:
    """The side of the cube with a shape's number of multiply-adds: one axis for squares and triples."""
    return (shape[0] * shape[1] * shape[2]) ** (1 / 3)


def size_name(shape: list[int]) -> str:
    return str(shape[0]) if shape[0] == shape[1] == shape[2] else "x".join(map(str, shape))


@dataclass
class Point:
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


def point(timing: Timing) -> Point:
    p = Point(list(timing.shape), edge(timing.shape), error=timing.error)
    if not timing.cpu_loops:
        return p
    p.cpu_us, p.gpu_us, p.wall_us = timing.median("cpu_us"), timing.median("gpu_us"), timing.median("wall_us")
    p.cpu_interval = stats.case_interval(timing)
    p.wall_interval = stats.case_interval(timing, metric="wall_us") if p.wall_us is not None else None
    p.host_bound = classify(p.cpu_us, p.gpu_us)[0]
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
    """A case's crossover: the size from which its GPU time per call exceeds its host time per call."""

    size: float | None  # None: no crossing within the sizes swept
    text: str
    crossings: int = 0  # how many times the curves cross (more than one: noise near the crossover)


def crossover(points: list[Point]) -> Crossover:
    usable = [p for p in points if p.cpu_us and p.gpu_us]
    if not usable:
        return Crossover(None, "no GPU time measured (a CPU run): the host does all the work at every size")
    values = [math.log(p.gpu_us / p.cpu_us) for p in usable]
    found = crossings([p.shape for p in usable], values)
    if not found:
        if values[0] > 0:
            return Crossover(None, f"GPU-bound at every size swept: the crossover is below {size_name(usable[0].shape)}")
        return Crossover(None, f"host-bound at every size swept: the crossover is above {size_name(usable[-1].shape)}")
    # the last time the GPU overtakes the host: from there on it stays ahead within the sweep
    last = [c for c in found if c.rising][-1] if any(c.rising for c in found) else None
    if last is None or values[-1] <= 0:
        return Crossover(None, f"host-bound again at the largest size ({size_name(usable[-1].shape)}): "
                               f"the curves cross {len(found)} times", len(found))
    text = (f"GPU time overtakes host time at about {last.size:,.0f} (between {size_name(last.low)} and "
            f"{size_name(last.high)}): host-bound below, GPU-bound above")
    if len(found) > 1:
        text += f"; the curves cross {len(found)} times, so the figures near it are within their noise"
    return Crossover(last.size, text, len(found))


@dataclass
class PairPoint:
    """A compared pair at one size: head against base."""

    shape: list[int]
    size: float
    wall: stats.PairFigures | None  # the wall-time ratio and difference (what a program feels)
    host: stats.PairFigures | None  # the host-time difference
    slower: str | None = None  # the case with the longer wall time per call
    extra_host_us: float | None = None  # the slower case's host time per call beyond the faster's
    share: float | None = None  # of the slower case's wall time, the extra host time that shows in it


def pair_point(base: str, bt: Timing, head: str, ht: Timing, paired: bool) -> PairPoint:
    p = PairPoint(list(bt.shape), edge(bt.shape), None, None)
    if not (bt.cpu_loops and ht.cpu_loops):
        return p
    p.host = stats.pair(base, bt, head, ht, paired)
    if not (bt.loops("wall_us") and ht.loops("wall_us")):
        return p
    p.wall = stats.pair(base, bt, head, ht, paired, metric="wall_us")
    # which case is slower, by how much host time, and what share of its wall time shows it: from the two
    # cases' medians, so the share is of a wall time it cannot exceed
    host = {base: bt.median("cpu_us"), head: ht.median("cpu_us")}
    wall = {base: bt.median("wall_us"), head: ht.median("wall_us")}
    slower, faster = (head, base) if wall[head] > wall[base] else (base, head)
    p.slower = slower
    p.extra_host_us = host[slower] - host[faster]
    # extra host time shows in the wall time only as far as the wall time grew: at a GPU-bound size the
    # launch queue hides it, and a wall-time gap larger than the host's is the GPU's, not the launch's
    visible = max(0.0, min(p.extra_host_us, wall[slower] - wall[faster]))
    p.share = visible / wall[slower] if wall[slower] else None
    return p


@dataclass
class SweepPair:
    base: str
    head: str
    paired: bool
    points: list[PairPoint]
    even: list[Crossing] = field(default_factory=list)  # sizes where the wall-time ratio crosses 1


@dataclass
class SweepAnalysis:
    run_dir: Path
    run: Run
    curves: dict[str, list[Point]] = field(default_factory=dict)  # label -> its points, in the order swept
    crossovers: dict[str, Crossover] = field(default_factory=dict)
    pairs: list[SweepPair] = field(default_factory=list)

    @property
    def shapes(self) -> list[list[int]]:
        sizes = self.run.config.get("sizes")
        if isinstance(sizes, list) and sizes:
            return sizes
        return next((([p.shape for p in c]) for c in self.curves.values() if c), [])


def analyse(run_dir: Path, run: Run) -> SweepAnalysis:
    out = SweepAnalysis(run_dir, run)
    for label, result in run.results.items():
        out.curves[label] = [point(t) for t in result.points]
        out.crossovers[label] = crossover(out.curves[label])
    for base, head in run.pairs:
        together = run.paired(base, head)
        rb, rh = run.results[base], run.results[head]
        points = [pair_point(base, bt, head, ht, together) for bt, ht in zip(rb.points, rh.points)
                  if bt.shape == ht.shape]
        measured = [p for p in points if p.wall and p.wall.ratio]
        even = crossings([p.shape for p in measured], [math.log(p.wall.ratio) for p in measured])
        out.pairs.append(SweepPair(base, head, together, points, even))
    return out
