"""The analysis of a run directory, a pure function of it and the layer rules: per case, its time per call
with an interval and where that time goes; per compared pair, the paired ratio and difference and what
differs frame by frame. Nothing here writes: every view (terminal, report, exports) computes it afresh
from run.json and the .folded files, so a change of the rules changes every view of a run alike."""

from __future__ import annotations

import contextlib
import functools
import gc
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from . import attribution, diff, flamegraph, layers, profstats, reading, rundir, safeopen, stats, sweep
from .errors import FlametoolError, RunDirError
from .operands import NewOutputs, UnlikeOperands, new_outputs, unlike_operands  # noqa: F401 - analysis.unlike_operands
from .attribution import CaseCosts, Skipped
from .record import CaseResult, Run, Timing

# diff exits with this when the head got slower than --fail-above allows (2 is bad input, 1 a failed case)
SLOWER_EXIT = 3


@dataclass
class CaseTiming:
    """A case's figures: at the requested shape and at the sample shape (the same object when equal)."""

    cpu_us: float | None
    gpu_us: float | None
    interval: stats.Interval | None
    processes: int
    loops: list[float]


def case_timing(timing: Timing | None) -> CaseTiming | None:
    if timing is None or not timing.cpu_loops:
        return None
    return CaseTiming(timing.cpu_us_per_call, timing.gpu_us_per_call, stats.case_interval(timing),
                      len([p for p in timing.processes if p.cpu_us]), timing.cpu_loops)


@dataclass
class PairAnalysis:
    base: str
    head: str
    timing: stats.PairFigures | None  # at the requested shape
    sample: stats.PairFigures | None  # at the sample shape, when it differs from the requested one
    profiles: tuple[attribution.Profile, attribution.Profile] | None = None  # (base, head) when both were sampled

    @functools.cached_property
    def diff(self) -> diff.PairDiff | None:
        """Layers and frames, head - base, at the sample shape (None: not both sampled). Made when first
        asked for: an export of one case's stacks never needs it. (The flame graph makes its own call tree,
        from the aligned stacks the diff carries.)"""
        return diff.diff(*self.profiles) if self.profiles else None

    @functools.cached_property
    def diff_by_library(self) -> diff.PairDiff | None:
        """The same in the 'library' view of the layers (system libraries as layers of their own)."""
        return diff.diff(*self.profiles, view="library") if self.profiles else None

    @property
    def headline(self) -> stats.PairFigures | None:
        """The figure to lead with: the one pooled over the most processes (the sample shape's, when the
        requested shape was too slow a loop to time in more than one). Rounds of one process count below
        any number of processes: they share the one process's speed, which is what pooling processes
        cancels (49 rounds of one process read 0.169 (0.164-0.174) on the H200 beside 3 processes)."""
        options = [f for f in (self.timing, self.sample) if f is not None and f.ratio is not None]
        return max(options, key=lambda f: (f.unit_name == "processes", f.units), default=None) if options else None


@dataclass
class CProfileTable:
    """A case's cProfile file, read: the functions that cost the most per step() call, of how many."""

    rows: list[profstats.Row]
    functions: int


def cprofile_table(run_dir: Path, result: CaseResult) -> CProfileTable | RunDirError | None:
    """The table of a case's .prof (None: it has none); a file that cannot be read is kept as its error, for
    the view that shows the table to raise (the terminal does not show it, and runs on)."""
    name = result.file("prof")
    if not rundir.is_file_name(name):
        return None
    try:
        stats = profstats.load(run_dir / name)
    except RunDirError as exc:
        return exc
    return CProfileTable(*profstats.top(stats, result.profile.cprofile_calls if result.profile else None))


@dataclass
class Analysis:
    run_dir: Path
    run: Run
    cases: dict[str, CaseCosts | Skipped] = field(default_factory=dict)  # label -> its attribution, or why none
    profiles: dict[str, attribution.Profile] = field(default_factory=dict)
    timings: dict[str, CaseTiming | None] = field(default_factory=dict)
    sample_timings: dict[str, CaseTiming | None] = field(default_factory=dict)
    pairs: list[PairAnalysis] = field(default_factory=list)
    cprofile: dict[str, CProfileTable | RunDirError | None] = field(default_factory=dict)  # label -> its .prof read
    unlike: list[UnlikeOperands] = field(default_factory=list)  # shapes at which the cases multiply other values
    new_outputs: NewOutputs | None = None  # jax's new output buffer each call beside cases that write into out

    @property
    def first_diff(self) -> diff.PairDiff | None:
        return next((p.diff for p in self.pairs if p.diff), None)

    @functools.cached_property
    def cases_by_library(self) -> dict[str, CaseCosts | Skipped]:
        """`cases` in the 'library' view of the layers."""
        return {l: (attribution.attribute(self.profiles[l], "library") if l in self.profiles else x)
                for l, x in self.cases.items()}

    def view(self, name: str) -> tuple[dict[str, CaseCosts | Skipped], list[diff.PairDiff]]:
        """(per-case attribution, the pairs' diffs) in a view of the layers ("caller" or "library")."""
        if name == "library":
            return self.cases_by_library, [p.diff_by_library for p in self.pairs if p.diff_by_library]
        return self.cases, [p.diff for p in self.pairs if p.diff]


def pair_figures(run: Run, base: str, head: str) -> tuple[stats.PairFigures | None, stats.PairFigures | None]:
    rb, rh = run.results[base], run.results[head]
    if rb.error or rh.error:
        return None, None
    together = run.paired(base, head)
    at_shape = stats.pair(base, rb.timing, head, rh.timing, together) if rb.timing and rh.timing else None
    at_sample = None
    if rb.sample_timing and rh.sample_timing and rb.sample_shape == rh.sample_shape:
        at_sample = stats.pair(base, rb.sample_timing, head, rh.sample_timing, together)
    return at_shape, at_sample


def analyse(run_dir: Path, run: Run, attribute: bool = True) -> "Analysis | sweep.SweepAnalysis | atlas.AtlasAnalysis":
    """Every case that has stacks attributed, every compared pair figured and diffed. A case with nothing to
    analyse (failed, not sampled) gets Skipped(why); a damaged stack file is a RunDirError naming it.
    attribute=False leaves `cases` empty (an export needs the stacks only). A sweep run has an analysis of
    its own (sweep.analyse)."""
    if run.kind == "sweep":
        return sweep.analyse(run_dir, run)
    if run.kind == "atlas":
        from . import atlas  # it analyses each op's run through this module

        return atlas.analyse(run_dir, run)
    out = Analysis(run_dir, run, unlike=unlike_operands(run), new_outputs=new_outputs(run))
    # a case that should have stacks and whose file is damaged is an error, named (the first in run order)
    profiles = prepared(run_dir, run, attribution.sampled_labels(run), attribute)
    for label, result in run.results.items():
        out.timings[label] = case_timing(result.timing)
        out.sample_timings[label] = case_timing(result.sample_timing) or out.timings[label]
        reason = attribution.skip_reason(result)
        if reason is None:
            out.profiles[label] = profile = profiles[label]
            if attribute:
                out.cases[label] = attribution.attribute(profile)
        else:
            out.cases[label] = Skipped(reason)
        if attribute:
            out.cprofile[label] = cprofile_table(run_dir, result)
    for base, head in run.pairs:
        at_shape, at_sample = pair_figures(run, base, head)
        both = base in out.profiles and head in out.profiles
        out.pairs.append(PairAnalysis(base, head, at_shape, at_sample,
                                      (out.profiles[base], out.profiles[head]) if both else None))
    return out


def prepare(run_dir: Path, run: Run, label: str, attribute: bool) -> attribution.Profile:
    """A case's profile with what an analysis derives from it alone made and kept in it: its figures in
    both views of the layers, its call tree, its aligned stacks (diff.aligned_profile) and their figures."""
    profile = attribution.load_profile(run_dir, run, label)
    if attribute:
        for view in layers.VIEWS:
            attribution.attribute(profile, view)
        flamegraph.prepare_case_graph(profile)
        # what made the figures and the graph is not needed again, and would only travel back from a worker;
        # gone before the aligned stacks make theirs (the diff graph's tree is both cases' aligned stacks merged)
        profile.drop_tree()
        aligned = diff.aligned_profile(profile)
        for view in layers.VIEWS:
            attribution.attribute(aligned, view)
        aligned.drop_tree()
    return profile


# what every case's prepare() shares (the run directory, its record, attribute): set before the workers are
# forked, which have it then; pickled with each case it was sent once per case (2,000 cases: 260 s)
_shared: tuple | None = None


def _prepare(label: str) -> attribution.Profile:
    run_dir, run, attribute = _shared
    return prepare(run_dir, run, label, attribute)


def prepared(run_dir: Path, run: Run, labels: list[str], attribute: bool) -> dict[str, attribution.Profile]:
    """prepare() of each case: on large profiles, one case per worker process, the cases side by side (each
    reads its file alone then, reading.py). Whatever the workers make travels back in the profiles."""
    size = sum(_size(run_dir / run.results[l].file("folded")) for l in labels)
    workers = min(len(labels), reading.cpus())
    if workers > 1 and size >= reading.PARALLEL_BYTES and not reading.in_worker:
        global _shared
        _shared = (run_dir, run, attribute)
        try:
            # results come back in order: the first damaged case in run order is the error raised
            got = reading.fork_map(_prepare, labels, workers)
            if got is not None:
                return dict(zip(labels, got))
        except BrokenProcessPool:  # a worker died (killed for its memory perhaps): here, one at a time
            pass
        finally:
            _shared = None
    return {label: prepare(run_dir, run, label, attribute) for label in labels}


@dataclass
class Stacks:
    """What an export writes: the stacks of the cases chosen, as profiles (by function or by source line)."""

    run_dir: Path
    profiles: list[attribution.Profile]


def stacks(run_dir: Path, run: Run, case: str | None = None, by_line: bool = False) -> Stacks:
    """Every sampled case's stacks, or one case's (`case`); `by_line`: one frame per source line."""
    analysed = analyse(run_dir, run, attribute=False)  # every sampled case read, each damaged file an error
    labels = [case] if case is not None else attribution.sampled_labels(run)
    if not labels:
        raise FlametoolError(f"{run_dir}: no case has stacks to export")
    if by_line:  # another naming of the same stacks: read again, keyed by line
        return Stacks(run_dir, [attribution.load_profile(run_dir, run, label, by_line=True) for label in labels])
    return Stacks(run_dir, [analysed.profiles[l] if l in analysed.profiles else attribution.load_profile(run_dir, run, l)
                            for l in labels])


def _size(path: Path) -> int:
    try:
        return safeopen.size(path)
    except RunDirError:  # load_profile says what is wrong with it
        return 0


def load(run_dir: Path | str, attribute: bool = True) -> "Analysis | sweep.SweepAnalysis":
    run_dir = Path(run_dir)
    return analyse(run_dir, rundir.load(run_dir), attribute)


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off for a while. An analysis allocates millions of tuples, lists and
    tree nodes and keeps them: each allocation burst would start a collection that walks all of them again
    (on a large profile, a third of the time), and none of them form cycles that need it."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def common_case(run_a: Path, a: Run, run_b: Path, b: Run, case: str | None) -> str:
    if case is not None:
        for run, data in ((run_a, a), (run_b, b)):
            if case not in data.results:
                raise FlametoolError(f"--case {case!r}: no such case in {run} (cases: {', '.join(data.results) or 'none'})")
        return case
    shared = [l for l in attribution.sampled_labels(a) if l in attribution.sampled_labels(b)]
    if not shared:
        raise FlametoolError(f"{run_a} and {run_b} have no sampled case in common; name one with --case")
    return shared[0]


@dataclass
class DiffResult:
    """`flametool diff`: one case in two runs, or two cases of one run (`cases`, (base, head)), head - base."""

    label: str  # what is compared: the case, or "HEAD - BASE"
    base_run: str
    head_run: str
    same_shape_and_dtype: bool
    figures: diff.PairDiff  # the layers and frames, head - base
    cases: tuple[str, str] | None = None

    @property
    def base_us_per_call(self) -> float:
        return self.figures.base_us_per_call

    @property
    def head_us_per_call(self) -> float:
        return self.figures.head_us_per_call

    @property
    def ratio(self) -> float | None:
        return self.figures.ratio


def diff_runs(run_a: Path, run_b: Path, case: str | None, view: str = "caller") -> DiffResult:
    """The same case in two runs, base = RUN_A, head = RUN_B; nothing is written."""
    a, b = rundir.load_profiled(run_a, "diff"), rundir.load_profiled(run_b, "diff")
    label = common_case(run_a, a, run_b, b, case)
    base = attribution.load_profile(run_a, a, label)
    head = attribution.load_profile(run_b, b, label)
    shapes = [(d.results[label].sample_shape, d.results[label].dtype) for d in (a, b)]
    return DiffResult(base.label, str(run_a), str(run_b), shapes[0] == shapes[1], diff.diff(base, head, view))


def diff_cases(run_dir: Path, base: str, head: str, view: str = "caller") -> DiffResult:
    """Two cases of one run, head - base; nothing is written."""
    run = rundir.load_profiled(run_dir, "diff")
    for label in (base, head):
        if label not in run.results:
            raise FlametoolError(f"--base/--head {label!r}: no such case in {run_dir} "
                                 f"(cases: {', '.join(run.results) or 'none'})")
    figures = diff.diff(attribution.load_profile(run_dir, run, base), attribution.load_profile(run_dir, run, head), view)
    rb, rh = run.results[base], run.results[head]
    return DiffResult(f"{head} - {base}", str(run_dir), str(run_dir),
                      (rb.sample_shape, rb.dtype) == (rh.sample_shape, rh.dtype), figures, (base, head))
