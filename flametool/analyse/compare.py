"""The analysis of a compare run, a pure function of its directory and the layer rules: per case, its time per call
with an interval and where that time goes; per compared pair, the paired ratio and difference and what
differs frame by frame. Nothing here writes: every view (terminal, report, exports) computes it afresh
from run.json and the .folded files, so a change of the rules changes every view of a run alike. (`flametool
diff` of two runs or two cases is diff.py; a sweep's analysis sweep.py, an atlas's atlas.py.)"""

from __future__ import annotations

import contextlib
import functools
import gc
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, cast

from . import attribution, countdiff, flamegraph, profstats, reading, timeline, treediff, views
from .. import pool
from ..run import anchoring, loaded, rundir, sources, stats
from ..errors import FlametoolError, RunDirError
from .operands import NewOutputs, UnlikeOperands, new_outputs, unlike_operands, wrote_operands  # noqa: F401 - compare.unlike_operands
from .attribution import CaseCosts, Skipped
from .aligned import Aligned, align
from .lines import CaseLines, LineDelta, case_lines, diff_lines
from .treediff import PairDiff
from ..run.record import CaseResult, Run
from ..run.timing import Timing
from ..workload.cases import own_file


@dataclass
class CaseTiming:
    """A case's figures: at the requested shape and at the sample shape (the same object when equal)."""

    cpu_us: float  # pooled: every CaseTiming has it (case_timing)
    gpu_us: float | None
    interval: stats.Interval | None
    processes: int
    loops: list[float]


def case_timing(timing: Timing | None, pooled: stats.Pooled | None) -> CaseTiming | None:
    """A case's figures: its host time pooled in its group (stats.group_pooled, the figure its pairs and layers
    are read at), its GPU time (the median of its loops: events cancel no host speed)."""
    if timing is None or not timing.cpu_loops or pooled is None:
        return None
    return CaseTiming(pooled.us, timing.gpu_us_per_call, pooled.interval,
                      len([p for p in timing.processes if p.cpu_us]), timing.cpu_loops)


@dataclass
class PairAnalysis:
    base: str
    head: str
    timing: stats.PairFigures | None  # at the requested shape
    sample: stats.PairFigures | None  # at the sample shape, when it differs from the requested one
    profiles: tuple[attribution.Profile, attribution.Profile] | None = None  # (base, head) when both were sampled
    anchored: anchoring.Anchored | None = None  # two environments of `compare --env`: relative to the anchor beside each
    counts: countdiff.CountDiff | None = None  # what a step does, counted, head - base (None: neither side counted)
    cross_library: bool = False  # two libraries (not one library in two environments): frames matched by role first
    # the figure to lead with (lead_figure): made with the pair, so that a view reads it rather than asks for it
    headline: stats.PairFigures | None = field(init=False)

    def __post_init__(self) -> None:
        self.headline = lead_figure(self.timing, self.sample)

    @functools.cached_property
    def diff(self) -> treediff.PairDiff | None:
        """Layers and frames, head - base, at the sample shape (None: not both sampled). Made when first
        asked for: an export of one case's stacks never needs it. (The flame graph makes its own call tree,
        from the aligned stacks the diff carries.)"""
        return self._diff("caller")

    @functools.cached_property
    def diff_by_library(self) -> PairDiff | None:
        """The same in the 'library' view of the layers (system libraries as layers of their own)."""
        return self._diff("library")

    def _diff(self, view: str) -> PairDiff | None:
        if not self.profiles:
            return None
        return treediff.diff(*self.profiles, view=view, at_speed=speed_heading(self.anchored, self.base, self.head),
                             by_role=self.cross_library)



def lead_figure(timing: stats.PairFigures | None, sample: stats.PairFigures | None) -> stats.PairFigures | None:
    """A pair's figure to lead with: the one pooled over the most processes (the sample shape's, when the
    requested shape was too slow a loop to time in more than one). Rounds of one process count below
    any number of processes: they share the one process's speed, which is what pooling processes
    cancels (49 rounds of one process read 0.169 (0.164-0.174) on the H200 beside 3 processes)."""
    options = [f for f in (timing, sample) if f is not None and f.ratio is not None]
    return max(options, key=lambda f: (f.unit_name == "processes", f.units), default=None) if options else None


@dataclass
class CProfileTable:
    """A case's cProfile file, read: the functions that cost the most per step() call, of how many."""

    rows: list[profstats.Row]
    functions: int


def cprofile_table(run_dir: Path, result: CaseResult, raw: bytes | RunDirError | None = None) -> CProfileTable | RunDirError | None:
    """The table of a case's .prof (None: it has none); a file that cannot be read is kept as its error, for
    the view that shows the table to raise (the terminal does not show it, and runs on). `raw`: the file as the
    run directory was read (Loaded.prof; None: read here)."""
    name = result.file("prof")
    if not rundir.is_file_name(name):
        return None
    if isinstance(raw, RunDirError):
        return raw
    try:
        stats = profstats.parse(raw, run_dir / name) if raw is not None else profstats.read(run_dir / name)
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
    rewritten: list[str] = field(default_factory=list)  # cases whose step wrote the values it reads (a += b)
    off_cpu: list["OffCpu"] = field(default_factory=list)  # cases whose caller was off the CPU much of its host time
    # each sampled case's threads other than the caller: their CPU time per call (all threads' minus the
    # caller's, pooled as the caller's is) and its stacks by layer
    threads: dict[str, "OtherThreads"] = field(default_factory=dict)
    gpu_busy: dict[str, timeline.Busy] = field(default_factory=dict)  # a step's GPU busy share, from its timeline
    # each view of the layers (views.VIEWS): (per-case attribution, the pairs' diffs), made by complete()
    views: dict[str, tuple[dict[str, CaseCosts | Skipped], list[treediff.PairDiff]]] = field(default_factory=dict)
    flames: flamegraph.FlameSet | None = None  # the report's flame graphs (of the default view's diffs), by complete()

    def complete(self) -> "Analysis":
        """Every figure a view may show, made now rather than when a renderer first asks: analysis is done before
        anything is laid out (the walk from analyse/ to render/ and back is then made once), and what a view shows
        is what was computed here. Returns itself."""
        for p in self.pairs:
            p.diff, p.diff_by_library  # noqa: B018 - cached properties, evaluated for their side effect
        self.cases_by_library, self.lines, self.pair_lines, self.aligned  # noqa: B018
        self.views = {name: self.view(name) for name in views.VIEWS}
        self.flames = flamegraph.flame_set(self.profiles.values(), [t.profile for t in self.threads.values()],
                                           self.views["caller"][1])
        return self

    @property
    def first_diff(self) -> treediff.PairDiff | None:
        return next((p.diff for p in self.pairs if p.diff), None)

    @functools.cached_property
    def cases_by_library(self) -> dict[str, CaseCosts | Skipped]:
        """`cases` in the 'library' view of the layers."""
        return {l: (attribution.attribute(self.profiles[l], "library") if l in self.profiles else x)
                for l, x in self.cases.items()}

    @functools.cached_property
    def sources(self) -> sources.Sources:
        """The run's record of line texts (sources.json; a run recorded before it: an empty one). analyse() sets
        it from the run directory as read (loaded.read); an Analysis built otherwise reads it when first asked."""
        return sources.load(self.run_dir)

    @functools.cached_property
    def line_profiles(self) -> dict[str, attribution.Profile]:
        """Each sampled case's stacks with one frame per source line: read when a view of lines first asks."""
        return {l: attribution.load_profile(self.run_dir, self.run, l, by_line=True) for l in self.profiles}

    @functools.cached_property
    def lines(self) -> dict[str, CaseLines]:
        """Each sampled case's host time per call per source line (analyse/lines.py)."""
        return {l: case_lines(p, self.sources, step_source=step_source(self.run, l))
                for l, p in self.line_profiles.items()}

    @functools.cached_property
    def pair_lines(self) -> dict[tuple[str, str], list[LineDelta]]:
        """Each sampled pair's lines, head - base, at the pair's common speed where it is anchored (as its
        frames are); keyed by (base, head)."""
        out: dict[tuple[str, str], list[LineDelta]] = {}
        for p in self.pairs:
            if p.base in self.line_profiles and p.head in self.line_profiles:
                b, h = at_common_speed(self.line_profiles[p.base], self.line_profiles[p.head], p.anchored)
                out[(p.base, p.head)] = diff_lines(
                    case_lines(b, self.sources, step_source=step_source(self.run, p.base)),
                    case_lines(h, self.sources, step_source=step_source(self.run, p.head)))
        return out

    @functools.cached_property
    def aligned(self) -> Aligned | None:
        """The step lines the cases share, one row per line and a column per case (analyse/aligned.py); None
        where no two cases run the same step lines."""
        return align(self.lines, {l: counts_of(self.run, l) for l in self.run.results}, list(self.run.results))

    def view(self, name: str) -> tuple[dict[str, CaseCosts | Skipped], list[treediff.PairDiff]]:
        """(per-case attribution, the pairs' diffs) in a view of the layers ("caller" or "library"); a completed
        analysis holds each in `views`, which the renderers read."""
        if name in self.views:
            return self.views[name]
        if name == "library":
            return self.cases_by_library, [p.diff_by_library for p in self.pairs if p.diff_by_library]
        return self.cases, [p.diff for p in self.pairs if p.diff]


@dataclass
class OffCpu:
    """A case whose calling thread ran on the CPU for much less than its host time at the sample shape (the
    median loop's thread_time over its clock time): the rest it waited (for worker threads it handed the call to,
    as JAX's CPU backend does, for a lock or the GPU) or was preempted by other work on the machine, so its host
    time is not all its own work."""

    label: str
    own_share: float  # the caller's CPU time over its host time, the median loop's

    @property
    def off_share(self) -> float:
        return 1 - self.own_share


# a caller on the CPU for under 70% of its host time is said: a busy caller reads 95-100% (its clock and its
# thread_time read one loop), a loaded 2-core machine's preemption some percent
OFF_CPU_SHARE = 0.3


def off_cpu(run: Run) -> list[OffCpu]:
    """The cases whose caller was off the CPU for OFF_CPU_SHARE or more of their host time at the sample shape,
    from each loop's host clock and the caller's own CPU time (all threads' less the others')."""
    out = []
    for label, result in run.results.items():
        t = result.at_sample_shape
        if t is None or result.error:
            continue
        shares = [(every - others) / host for x in t.processes
                  for host, every, others in zip(x.cpu_us, x.all_threads_us, x.other_threads_us) if host > 0]
        own = statistics.median(shares) if shares else 1.0
        if 1 - own >= OFF_CPU_SHARE:
            out.append(OffCpu(label, own))
    return out


@dataclass
class OtherThreads:
    """A case's threads other than the caller during its loop: CPU us per call on them (other_threads_us: every
    thread's CPU time minus the caller's own, the mean of every loop at the sample shape), and their
    stacks (sampled with the caller's, py-spy --threads) by layer."""

    us_per_call: float
    profile: attribution.Profile | None = None
    costs: CaseCosts | None = None
    # the samples py-spy would have taken of them had it sampled them as it sampled the caller (its samples of
    # the caller's loop times their CPU time over the caller's time per call while sampled); None: not sampled
    expected_samples: float | None = None

    @property
    def native(self) -> bool:
        """Busy threads py-spy never sampled where it would have caught them many times: threads that run no
        Python, which py-spy does not sample at all (XLA's worker pool, which JAX dispatches to)."""
        return self.profile is None and (self.expected_samples or 0) >= NATIVE_EXPECTED


# so many samples expected and none taken (a chance of e^-5, under 1%) is no bad luck: the threads are not Python's
NATIVE_EXPECTED = 5.0


def expected_samples(result: CaseResult, us_per_call: float) -> float | None:
    """OtherThreads.expected_samples of `result`'s other threads at `us_per_call` of CPU time per call."""
    s = result.sampling
    if s is None or not s.sampled_us_per_call:
        return None
    return (s.kept_samples + s.loop_samples) * us_per_call / s.sampled_us_per_call


def other_threads(run_dir: Path, run: Run, label: str, attribute: bool) -> OtherThreads | None:
    result = run.results[label]
    timing = result.at_sample_shape
    # the mean of the loops, not their median as for the caller's own time: other threads run in bursts (a
    # worker waits for the GIL a switch interval, 5 ms, at a time), so loops shorter than a burst read it in
    # some loops and not in others (a run here: 0.0017 to 0.0475 us a call, median 0.0017, mean 0.017), and only
    # the mean is their share of each call
    loops = timing.loops("other_threads_us") if timing is not None else []
    if not loops:
        return None
    us = statistics.fmean(loops)
    profile = attribution.threads_profile(run_dir, result, label, us) if us > 0 else None
    return OtherThreads(us, profile, attribution.attribute(profile) if profile is not None and attribute else None,
                        expected_samples(result, us))


def pair_figures(run: Run, base: str, head: str, pooled: dict[str, stats.Pooled] | None = None,
                 pooled_sample: dict[str, stats.Pooled] | None = None, together: bool | None = None
                 ) -> tuple[stats.PairFigures | None, stats.PairFigures | None]:
    """The pair at the requested shape and at the sample shape (when another), its difference taken at the
    base's pooled time in its group (`pooled`, `pooled_sample`: stats.group_pooled of the run). `together`:
    whether they were timed in the same processes (Loaded.together; None: asked of the run)."""
    rb, rh = run.results[base], run.results[head]
    if rb.error or rh.error:
        return None, None
    together = run.paired(base, head) if together is None else together
    us = lambda p: p[base].us if p is not None and base in p else None  # noqa: E731
    at_shape = stats.pair(base, rb.timing, head, rh.timing, together, base_us=us(pooled)) if rb.timing and rh.timing else None
    at_sample = None
    if rb.sample_timing and rh.sample_timing and rb.sample_shape == rh.sample_shape:
        at_sample = stats.pair(base, rb.sample_timing, head, rh.sample_timing, together, base_us=us(pooled_sample))
    return at_shape, at_sample


def analyse(run_dir: Path, run: Run, attribute: bool = True, row_only: bool = False) -> Analysis:
    """A compare run's analysis: every case that has stacks attributed, every compared pair figured and diffed.
    A case with nothing to analyse (failed, not sampled) gets Skipped(why); a damaged stack file is a RunDirError
    naming it. attribute=False leaves `cases` empty (an export needs the stacks only). row_only: what an atlas's
    row of the op reads, the cases' timings and their figures in the default view; no other view, aligned
    stacks, flame graphs, cProfile tables, other threads or pairs (the op's own page has those). A sweep and an
    atlas have analyses of their own (dispatch.analyse chooses)."""
    # the run directory read first, whole (the record's derived values, the stack files' sizes, sources.json):
    # what follows computes from it; a view of lines is made only where the cases are attributed
    got = loaded.read(run_dir, run, whole=attribute and not row_only)
    out = Analysis(run_dir, run, unlike=unlike_operands(run), new_outputs=new_outputs(run, got.op), rewritten=wrote_operands(run),
                   off_cpu=off_cpu(run), gpu_busy=timeline.busy_by_case(run_dir, run))
    if attribute and not row_only:
        out.sources = got.sources
    # the cases' pooled times in their groups, made once: what their figures, their pairs and their profiles'
    # scale (the sample shape's, without intervals, as load_profile reads it) are read at
    pooled, pooled_sample = stats.group_pooled(run, False), stats.group_pooled(run, True)
    scale = stats.group_pooled(run, True, intervals=False)
    # a case that should have stacks and whose file is damaged is an error, named (the first in run order)
    profiles = prepared(run_dir, run, attribution.sampled_labels(run), got.folded_bytes, attribute, row_only, scale)
    for label, result in run.results.items():
        out.timings[label] = case_timing(result.timing, pooled.get(label))
        out.sample_timings[label] = (case_timing(result.sample_timing, pooled_sample.get(label))
                                     if result.sample_timing else None) or out.timings[label]
        reason = attribution.skip_reason(result, run)
        if reason is None:
            out.profiles[label] = profile = profiles[label]
            if attribute:
                out.cases[label] = attribution.attribute(profile)
        else:
            out.cases[label] = Skipped(reason)
        if attribute and not row_only:
            out.cprofile[label] = cprofile_table(run_dir, result, got.prof.get(label))
    if row_only:
        return out
    for label, result in run.results.items():
        # schema 3 (runs before it have no other_threads_us): an export needs none of this
        if not attribute or result.error or result.profile is None or result.at_sample_shape is None:
            continue
        found = other_threads(run_dir, run, label, attribute)
        if found is not None:
            out.threads[label] = found
    for base, head in got.pairs:
        at_shape, at_sample = pair_figures(run, base, head, pooled, pooled_sample, got.together[(base, head)])
        both = base in out.profiles and head in out.profiles
        anchored = anchoring.anchored_pair(run, base, head, pooled_sample)
        pair_profiles = at_common_speed(out.profiles[base], out.profiles[head], anchored) if both else None
        out.pairs.append(PairAnalysis(base, head, at_shape, at_sample, pair_profiles, anchored,
                                      count_pair(run, base, run, head, (base, head)),
                                      cross_library(run.results[base], run.results[head])))
    return out


def counts_of(run, label: str):
    """A case's counted loop (profiled.ProfileProcess.counts), None where it has none, or where its counts are
    corrupted (its step removed the counting hook): those are kept in run.json, out of every diff."""
    r = run.results.get(label)
    counts = r.profile.counts if r is not None and r.profile is not None else None
    return None if counts is None or counts.corrupted else counts


def uncounted(run, label: str) -> str | None:
    """Why a case has no counted loop, in words (None where it has one): what is true of this run and case."""
    r = run.results.get(label)
    if r is None or counts_of(run, label) is not None:
        return None
    if r.error:
        return "it failed"
    held = r.profile.counts if r.profile is not None else None
    if held is not None and held.corrupted:
        return f"its counts are corrupted: {held.corrupted}; left out"
    if run.config.recorded.get("count") is False:
        return "a --no-count run"
    if run.schema < 3:
        return "a run recorded before flametool counted calls"
    if r.profile is None:
        return ("the run did not finish" if not run.complete else
                "its profile was lost" if r.profile_error else "it was not profiled")
    return "its counted loop did not run"


def count_pair(run_a, a: str, run_b, b: str, names: tuple[str, str]):
    """countdiff.diff_counts of case `a` in run_a and `b` in run_b, each side's missing loop said as it is."""
    return countdiff.diff_counts(counts_of(run_a, a), counts_of(run_b, b), *names,
                                 why=(uncounted(run_a, a), uncounted(run_b, b)))


def cross_library(base: CaseResult, head: CaseResult) -> bool:
    """Two libraries (numpy and torch, a case of one's own and a built-in), not one library in two
    environments or runs: their frames do the same jobs under other names (treediff.role_rows)."""
    return (base.library or base.factory) != (head.library or head.factory)


def at_common_speed(base: attribution.Profile, head: attribution.Profile,
                    anchored: anchoring.Anchored | None) -> tuple[attribution.Profile, attribution.Profile]:
    """Both sides' samples at the pair's common speed, as an anchored comparison leads with: the base's time per
    call at that speed (Anchored.at_us) and the head's that times the anchored ratio. Each side's own time was
    measured at the speed the host gave its processes (another environment, another run), which the anchor
    says differed. Not anchored: both as they are."""
    if anchored is None:
        return base, head
    return cast("tuple[attribution.Profile, attribution.Profile]",  # one for each of the two
                tuple(attribution.Profile(p.label, p.stacks, p.frames, us, p.recorded_samples, p.repaired_samples,
                                          p.names)
                      for p, us in ((base, anchored.at_us), (head, anchored.at_us * anchored.ratio))))


def speed_heading(anchored: anchoring.Anchored | None, base: str, head: str) -> str | None:
    """What a pair's sides are when at_common_speed put them at the pair's common speed, for the tables' readers."""
    if anchored is None:
        return None
    a, b = anchored, anchored.absolute
    assert b.base_us is not None  # the absolute figures of an anchored pair: the text below shows it
    own_head = b.base_us + b.diff_us if b.diff_us is not None else None
    return (f"both at the common speed of their {a.base_units} + {a.head_units} {a.unit_name}: {base} "
            f"{a.at_us:.2f} us ({b.base_us:.2f} in its own), {head} {a.at_us:.2f} us x {a.ratio:.3f} relative to "
            f"{a.anchor} = {a.at_us * a.ratio:.2f} us per call"
            + (f" ({own_head:.2f} in its own)" if own_head is not None else ""))


def prepare(run_dir: Path, run: Run, label: str, attribute: bool, row_only: bool = False,
            scale: dict[str, stats.Pooled] | None = None) -> attribution.Profile:
    """A case's profile with what an analysis derives from it alone made and kept in it: its figures in
    both views of the layers, its call tree, its aligned stacks (treediff.aligned_profile) and their figures.
    `row_only`: its figures in the default view alone (an atlas's row reads no more)."""
    profile = attribution.load_profile(run_dir, run, label, scale=scale)
    if attribute and row_only:
        attribution.attribute(profile)
        profile.drop_tree()
    elif attribute:
        for view in views.VIEWS:
            attribution.attribute(profile, view)
        flamegraph.prepare_case_graph(profile)
        # what made the figures and the graph is not needed again, and would only travel back from a worker;
        # gone before the aligned stacks make theirs (the diff graph's tree is both cases' aligned stacks merged)
        profile.drop_tree()
        aligned = treediff.aligned_profile(profile)
        for view in views.VIEWS:
            attribution.attribute(aligned, view)
        aligned.drop_tree()
    return profile


# what every case's prepare() shares (the run directory, its record, attribute): set before the workers are
# forked, which have it then; pickled with each case it was sent once per case (2,000 cases: 260 s)
_shared: tuple | None = None


def _prepare(label: str) -> attribution.Profile:
    assert _shared is not None  # set before the workers fork
    run_dir, run, attribute, row_only, scale = _shared
    return prepare(run_dir, run, label, attribute, row_only, scale)


def prepared(run_dir: Path, run: Run, labels: list[str], folded_bytes: dict[str, int], attribute: bool,
             row_only: bool = False, scale: dict[str, stats.Pooled] | None = None) -> dict[str, attribution.Profile]:
    """prepare() of each case: on large profiles, one case per worker process, the cases side by side (each
    reads its file alone then, reading.py). Whatever the workers make travels back in the profiles.
    `folded_bytes`: the stack files' sizes (Loaded.folded_bytes), which say whether the profiles are large."""
    size = sum(folded_bytes.get(l, 0) for l in labels)  # sampled: each has its file
    workers = min(len(labels), pool.cpus())
    if workers > 1 and size >= reading.PARALLEL_BYTES and not pool.in_worker:
        global _shared
        _shared = (run_dir, run, attribute, row_only, scale)
        try:
            # results come back in order: the first damaged case in run order is the error raised
            got = pool.fork_map(_prepare, labels, workers)
            if got is not None:
                return dict(zip(labels, got))
        except pool.WorkerDied:  # a worker died (killed for its memory perhaps): here, one at a time
            pass
        finally:
            _shared = None
    return {label: prepare(run_dir, run, label, attribute, row_only, scale) for label in labels}


@dataclass
class Stacks:
    """What an export writes: the stacks of the cases chosen, as profiles (by function or by source line)."""

    run_dir: Path
    profiles: list[attribution.Profile]
    by_line: bool = False  # each frame is one source line (export --lines): its Frame's line is the frame's
    # the run's record of line texts (sources.json): the .pyx line a generated C/C++ line came from, as the lines
    # views show it
    sources: sources.Sources = field(default_factory=sources.Sources)


def stacks(run_dir: Path, run: Run, case: str | None = None, by_line: bool = False) -> Stacks:
    """Every sampled case's stacks, or one case's (`case`); `by_line`: one frame per source line."""
    analysed = analyse(run_dir, run, attribute=False)  # every sampled case read, each damaged file an error
    labels = [case] if case is not None else attribution.sampled_labels(run)
    if not labels:
        raise FlametoolError(f"{run_dir}: no case has stacks to export: {attribution.why_no_stacks(run)}")
    if by_line:  # another naming of the same stacks: read again, keyed by line
        return Stacks(run_dir, [attribution.load_profile(run_dir, run, label, by_line=True) for label in labels], True,
                      analysed.sources)
    return Stacks(run_dir, [analysed.profiles[l] if l in analysed.profiles else attribution.load_profile(run_dir, run, l)
                            for l in labels])


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


def step_source(run: Run, label: str) -> str | None:
    """A workload case's file (its step is fn, in that file; lines.step_functions), None for any other case."""
    spec = next((c for c in (run.config.recorded or {}).get("cases") or [] if isinstance(c, dict)
                 and c.get("label") == label and c.get("xp")), None)
    return own_file(spec.get("file"), spec.get("module"), True) if spec else None
