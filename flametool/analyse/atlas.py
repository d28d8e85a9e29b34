"""The analysis of an atlas, a pure function of its directory like compare.analyse: every op's compare run
analysed as compare analyses it, and per op and library the host time per call at the op's host-bound size,
its ratio to the op's fastest library (paired: all the libraries of an op share their timing processes), the
CPU time of every thread per call, where the time goes by layer, and the layer whose time differs most from
the fastest library's."""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

from . import attribution, compare, naming
from .. import pool
from ..run import rundir, stats
from ..workload import builtin_workloads, builtins, ops
from ..errors import RunDirError
from ..run.counts import count_words
from ..run.record import AtlasPart, Run, part_word


@dataclass
class AtlasFrame:
    name: str  # as displayed
    layer: str
    self_us: float  # self time per call


@dataclass
class AtlasCell:
    """One library at one op."""

    label: str
    us: float | None = None  # host time per call (the caller's clock), pooled as compare pools it
    interval: stats.Interval | None = None
    gpu_us: float | None = None
    all_threads_us: float | None = None  # CPU time of every thread of the process per call
    ratio: stats.PairFigures | None = None  # against the op's fastest library (None for the fastest itself)
    layers: dict[str, float] = field(default_factory=dict)  # host us per call by layer
    layers_se: dict[str, float] = field(default_factory=dict)  # their standard errors (from the sample counts)
    differs_most: str | None = None  # the layer whose time differs most from the fastest library's
    differs_by: float | None = None  # this library's time in it minus the fastest's, us per call
    # where differs_most is mostly taken back by a layer the other way (each library's own layer: NumPy +26 us,
    # ATen -23 us, 2.7 us apart in all), that layer and its difference; else None
    offset_by: tuple[str, float] | None = None
    frames: list[AtlasFrame] = field(default_factory=list)  # the largest self times
    samples: int | None = None
    threads: int | None = None  # threads of the sampled process (each sample stops them all)
    slowdown: float | None = None  # the loop's time while sampled over its own
    kernels: Fraction | None = None  # kernels per call (the counted loop; None: not counted, or an older run)
    api_calls: Fraction | None = None  # CUDA API calls per call, likewise
    error: str | None = None
    counted: str = ""  # '1 kernel, 8 API calls' per call (counted_words), '' where they were not counted


def counted_words(kernels: Fraction | None, api_calls: Fraction | None) -> str:
    """'1 kernel, 8 API calls' per call, or '' where they were not counted."""
    if kernels is None or api_calls is None:
        return ""
    return (f"{count_words(kernels)} kernel{'' if kernels == 1 else 's'}, "
            f"{count_words(api_calls)} API call{'' if api_calls == 1 else 's'}")


@dataclass
class AtlasRow:
    """One op: its run's folder, its size, its fastest library and every library's cell."""

    op: str
    does: str
    dir: str
    shape: list[int] | None = None
    dtype: str = ""
    fastest: str | None = None
    cells: dict[str, AtlasCell] = field(default_factory=dict)
    error: str | None = None  # the op's run could not be made or read
    processes: list[int] = field(default_factory=list)  # the timing processes its run ran (one per group)
    rounds: list[int] = field(default_factory=list)  # the rounds of timed loops its processes ran
    # the op's own report, relative to the atlas's page (its pairs' diffs are there): made with the row
    report: str = field(init=False)

    def __post_init__(self) -> None:
        self.report = f"{self.dir}/{rundir.REPORT_FILE}"


@dataclass
class AtlasAnalysis:
    run_dir: Path
    run: Run
    libraries: list[str]
    rows: list[AtlasRow]

    @property
    def on_gpu(self) -> bool:
        return (self.run.config.device or "cpu") != "cpu"

    @property
    def item(self) -> str:
        """What a row is, as the views name it: 'op', 'workload' (an atlas of --workloads), or both."""
        workloads = [part_word(r.op) == "workload" for r in self.rows]
        return "workload" if workloads and all(workloads) else "op or workload" if any(workloads) else "op"


TOP_FRAMES = 5


def cell(analysed, label: str, fastest: str | None, threads: dict[str, stats.Pooled]) -> AtlasCell:
    run = analysed.run
    r = run.results[label]
    out = AtlasCell(label, error=r.error)
    timing = r.at_sample_shape
    if r.error or timing is None or not timing.cpu_loops:
        out.error = out.error or "not timed"
        return out
    # the case's host time as compare gives it (pooled in its processes: the figure its layers add up to)
    pooled = analysed.sample_timings.get(label)
    out.us, out.interval = (pooled.cpu_us, pooled.interval) if pooled else (timing.median("cpu_us"), None)
    out.gpu_us = timing.median("gpu_us")
    # every thread's CPU time pooled as the caller's is (both at the median process's speed)
    out.all_threads_us = threads[label].us if label in threads else timing.median("all_threads_us")
    if fastest is not None and fastest != label:
        out.ratio = stats.pair(fastest, run.results[fastest].at_sample_shape, label, timing, run.paired(fastest, label))
    profile = analysed.profiles.get(label)
    if profile is not None:
        costs = attribution.attribute(profile)
        out.layers = {layer: f.us_per_call for layer, f in costs.layers.items()}
        out.layers_se = {layer: f.se_us for layer, f in costs.layers.items()}
        out.frames = [AtlasFrame(naming.display_name(f.frame), f.layer, f.self.us_per_call)
                      for f in costs.frames[:TOP_FRAMES]]
        out.samples = costs.samples
    if r.profile is not None:
        out.slowdown = r.profile.slowdown
        out.threads = r.sampling.threads if r.sampling else None
        c = r.profile.counts
        if c is not None and c.counted("kernel") and c.counted("api"):
            per = max(c.ops_per_step, 1)  # per call: a step of N operations (a graph) does N calls' work
            out.kernels, out.api_calls = c.total("kernel") / per, c.total("api") / per
            out.counted = counted_words(out.kernels, out.api_calls)
    return out


def mark_differs_most(cells: dict[str, AtlasCell], fastest: str | None) -> None:
    """Each library's layer whose time differs most from the fastest library's (largest |difference|)."""
    base = cells.get(fastest) if fastest else None
    if base is None or not base.layers:
        return
    for c in cells.values():
        if c.label == fastest or not c.layers:
            continue
        deltas = {layer: c.layers.get(layer, 0.0) - base.layers.get(layer, 0.0) for layer in set(c.layers) | set(base.layers)}
        layer = max(sorted(deltas), key=lambda k: abs(deltas[k]))
        c.differs_most, c.differs_by = layer, deltas[layer]
        c.offset_by = offset(deltas, layer)


# A largest layer difference more than this many times the cell's whole difference is mostly taken back by others
OFFSET = 2.0


def offset(deltas: dict[str, float], layer: str) -> tuple[str, float] | None:
    """The layer whose difference most takes back `layer`'s (the other way), where `layer`'s is more than OFFSET
    times the layers' whole difference: alone it would read as the difference it mostly is not."""
    total, most = sum(deltas.values()), deltas[layer]
    if abs(most) <= OFFSET * abs(total):
        return None
    back = [k for k in sorted(deltas) if deltas[k] * most < 0]
    if not back:
        return None
    other = max(back, key=lambda k: abs(deltas[k]))
    return other, deltas[other]


def row(run_dir: Path, part: AtlasPart) -> AtlasRow:
    does = (ops.OPS[part.op].does if part.op in ops.OPS else
            builtin_workloads.WORKLOADS[part.op].does if part.op in builtin_workloads.WORKLOADS else "")
    out = AtlasRow(part.op, does, part.dir, error=part.error)
    if not (run_dir / part.dir / rundir.RUN_FILE).exists():
        out.error = out.error or "not measured: the atlas stopped before this op"
        return out
    try:
        op_dir = run_dir / part.dir
        analysed = compare.analyse(op_dir, rundir.load(op_dir), row_only=True)
    except RunDirError as exc:
        out.error = str(exc)
        return out
    run = analysed.run
    if not any(r.at_sample_shape is not None and r.at_sample_shape.cpu_loops for r in run.results.values()):
        # every library failed (a workload's run keeps going, so its part has no error of its own): what each said
        failed = "; ".join(f"{l}: {r.error}" for l, r in run.results.items() if r.error)
        out.error = out.error or ("not measured: the atlas stopped during this op" if not run.complete
                                  else "no library was timed" + (f": {failed}" if failed else ""))
        return out
    timed = {l: t.cpu_us for l, t in analysed.sample_timings.items()
             if t is not None and t.cpu_us is not None and not run.results[l].error}
    # the fastest library, not a floor (cuda-launch launches an empty kernel: every library is slower than it)
    libraries = {l: t for l, t in timed.items() if not builtins.is_floor(l, run.results[l].factory)} or timed
    out.fastest = min(libraries, key=libraries.__getitem__) if libraries else None
    out.shape = next((r.sample_shape or r.shape for r in run.results.values()), None)
    out.dtype = ", ".join(sorted({r.dtype for r in run.results.values()}))
    threads = stats.group_pooled(run, at_sample=True, intervals=False, metric="all_threads_us")
    out.cells = {label: cell(analysed, label, out.fastest, threads) for label in run.results}
    out.processes = sorted({g.processes for g in run.groups if g.cases})
    out.rounds = sorted({len(p.cpu_us) for r in run.results.values()
                         for t in (r.timing, r.sample_timing) if t is not None for p in t.processes if p.cpu_us})
    mark_differs_most(out.cells, out.fastest)
    if not run.complete:  # stopped part way: its figures are what finished, never read as the op's whole run
        out.error = out.error or "incomplete: the atlas stopped during this op (its figures: what finished)"
    return out


# the atlas's directory, for the forked workers that analyse its ops (set before they are forked)
_shared: Path | None = None


def _row(part: AtlasPart) -> AtlasRow:
    assert _shared is not None  # set before the workers fork
    return row(_shared, part)


def analyse(run_dir: Path, run: Run) -> AtlasAnalysis:
    """Every op's row; the ops are analysed side by side, one per CPU (each is a whole compare run: the
    six ops of samples/h200-atlas took 1.3 s one after another), and come back in the atlas's order."""
    global _shared
    got = None
    workers = min(len(run.parts), pool.cpus())
    if workers > 1 and not pool.in_worker:
        _shared = run_dir
        try:
            got = pool.fork_map(_row, run.parts, workers)
        except pool.WorkerDied:  # a worker died: here, one at a time
            got = None
        finally:
            _shared = None
    if got is None:
        got = [row(run_dir, part) for part in run.parts]
    # every library of the ops that were analysed, in the order the ops first show them
    libraries = list(dict.fromkeys(label for r in got for label in r.cells))
    return AtlasAnalysis(run_dir, run, libraries, got)
