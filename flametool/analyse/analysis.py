"""The analysis of a run directory, a pure function of it and the layer rules: per case, its time per call
with an interval and where that time goes; per compared pair, the paired ratio and difference and what
differs frame by frame. Nothing here writes: every view (terminal, report, exports) computes it afresh
from run.json and the .folded files, so a change of the rules changes every view of a run alike."""

from __future__ import annotations

import contextlib
import functools
import gc
import statistics
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, cast

from . import attribution, countdiff, diff, flamegraph, layers, profstats, reading
from ..run import rundir, safeopen, stats
from ..errors import FlametoolError, RunDirError
from .operands import NewOutputs, UnlikeOperands, new_outputs, unlike_operands  # noqa: F401 - analysis.unlike_operands
from .attribution import CaseCosts, Skipped
from .diff import PairDiff
from ..run.record import CaseResult, Run, Timing

# diff exits with SLOWER_EXIT when the head got slower than --fail-above allows (2 is bad input, 1 a failed case),
# INCONCLUSIVE_EXIT when the interval holds the threshold (set in errors.py, which the options' help reads)
from ..errors import INCONCLUSIVE_EXIT, SLOWER_EXIT


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
    anchored: stats.Anchored | None = None  # two environments of `compare --env`: relative to the anchor beside each
    counts: countdiff.CountDiff | None = None  # what a step does, counted, head - base (None: neither side counted)
    cross_library: bool = False  # two libraries (not one library in two environments): frames matched by role first

    @functools.cached_property
    def diff(self) -> diff.PairDiff | None:
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
        return diff.diff(*self.profiles, view=view, at_speed=speed_heading(self.anchored, self.base, self.head),
                         by_role=self.cross_library)

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
        stats = profstats.read(run_dir / name)
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
    # each sampled case's threads other than the caller: their CPU time per call (all threads' minus the
    # caller's, pooled as the caller's is) and its stacks by layer
    threads: dict[str, "OtherThreads"] = field(default_factory=dict)

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


@dataclass
class OtherThreads:
    """A case's threads other than the caller during its loop: CPU us per call on them (other_threads_us: every
    thread's CPU time minus the caller's own, the mean of every loop at the sample shape), and their
    stacks (sampled with the caller's, py-spy --threads) by layer."""

    us_per_call: float
    profile: attribution.Profile | None = None
    costs: CaseCosts | None = None


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
    return OtherThreads(us, profile, attribution.attribute(profile) if profile is not None and attribute else None)


def pair_figures(run: Run, base: str, head: str, pooled: dict[str, stats.Pooled] | None = None,
                 pooled_sample: dict[str, stats.Pooled] | None = None
                 ) -> tuple[stats.PairFigures | None, stats.PairFigures | None]:
    """The pair at the requested shape and at the sample shape (when another), its difference taken at the
    base's pooled time in its group (`pooled`, `pooled_sample`: stats.group_pooled of the run)."""
    rb, rh = run.results[base], run.results[head]
    if rb.error or rh.error:
        return None, None
    together = run.paired(base, head)
    us = lambda p: p[base].us if p is not None and base in p else None  # noqa: E731
    at_shape = stats.pair(base, rb.timing, head, rh.timing, together, base_us=us(pooled)) if rb.timing and rh.timing else None
    at_sample = None
    if rb.sample_timing and rh.sample_timing and rb.sample_shape == rh.sample_shape:
        at_sample = stats.pair(base, rb.sample_timing, head, rh.sample_timing, together, base_us=us(pooled_sample))
    return at_shape, at_sample


def analyse(run_dir: Path, run: Run, attribute: bool = True) -> Analysis:
    """A compare run's analysis: every case that has stacks attributed, every compared pair figured and diffed.
    A case with nothing to analyse (failed, not sampled) gets Skipped(why); a damaged stack file is a RunDirError
    naming it. attribute=False leaves `cases` empty (an export needs the stacks only). A sweep and an atlas have
    analyses of their own (dispatch.analyse chooses)."""
    out = Analysis(run_dir, run, unlike=unlike_operands(run), new_outputs=new_outputs(run))
    # a case that should have stacks and whose file is damaged is an error, named (the first in run order)
    profiles = prepared(run_dir, run, attribution.sampled_labels(run), attribute)
    pooled, pooled_sample = stats.group_pooled(run, False), stats.group_pooled(run, True)
    for label, result in run.results.items():
        out.timings[label] = case_timing(result.timing, pooled.get(label))
        out.sample_timings[label] = (case_timing(result.sample_timing, pooled_sample.get(label))
                                     if result.sample_timing else None) or out.timings[label]
        reason = attribution.skip_reason(result)
        if reason is None:
            out.profiles[label] = profile = profiles[label]
            if attribute:
                out.cases[label] = attribution.attribute(profile)
        else:
            out.cases[label] = Skipped(reason)
        if attribute:
            out.cprofile[label] = cprofile_table(run_dir, result)
    for label, result in run.results.items():
        # schema 3 (runs before it have no other_threads_us): an export needs none of this
        if not attribute or result.error or result.profile is None or result.at_sample_shape is None:
            continue
        found = other_threads(run_dir, run, label, attribute)
        if found is not None:
            out.threads[label] = found
    for base, head in run.pairs:
        at_shape, at_sample = pair_figures(run, base, head, pooled, pooled_sample)
        both = base in out.profiles and head in out.profiles
        anchored = stats.anchored_pair(run, base, head, pooled_sample)
        pair_profiles = at_common_speed(out.profiles[base], out.profiles[head], anchored) if both else None
        out.pairs.append(PairAnalysis(base, head, at_shape, at_sample, pair_profiles, anchored,
                                      countdiff.diff_counts(counts_of(run, base), counts_of(run, head), base, head),
                                      cross_library(run.results[base], run.results[head])))
    return out


def counts_of(run, label: str):
    """A case's counted loop (record.ProfileProcess.counts), None where it has none."""
    r = run.results.get(label)
    return r.profile.counts if r is not None and r.profile is not None else None


def cross_library(base: CaseResult, head: CaseResult) -> bool:
    """Two libraries (numpy and torch, a case of one's own and a built-in), not one library in two
    environments or runs: their frames do the same jobs under other names (diff.role_rows)."""
    return (base.library or base.factory) != (head.library or head.factory)


def at_common_speed(base: attribution.Profile, head: attribution.Profile,
                    anchored: stats.Anchored | None) -> tuple[attribution.Profile, attribution.Profile]:
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


def anchored_diff(base: attribution.Profile, head: attribution.Profile, anchored: stats.Anchored | None, view: str,
                  names: tuple[str, str], by_role: bool = False) -> diff.PairDiff:
    """diff.diff of two profiles, both at the pair's common speed when the comparison is anchored, the tables
    told so under `names` (base, head): `flametool diff` of two runs, or of two cases of one run."""
    return diff.diff(*at_common_speed(base, head, anchored), view, at_speed=speed_heading(anchored, *names),
                     by_role=by_role)


def speed_heading(anchored: stats.Anchored | None, base: str, head: str) -> str | None:
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
    assert _shared is not None  # set before the workers fork
    run_dir, run, attribute = _shared
    return prepare(run_dir, run, label, attribute)


def prepared(run_dir: Path, run: Run, labels: list[str], attribute: bool) -> dict[str, attribution.Profile]:
    """prepare() of each case: on large profiles, one case per worker process, the cases side by side (each
    reads its file alone then, reading.py). Whatever the workers make travels back in the profiles."""
    size = sum(_size(run_dir / cast(str, run.results[l].file("folded"))) for l in labels)  # sampled: each has it
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
    timed = [l for l, r in a.results.items() if l in b.results and r.at_sample_shape and b.results[l].at_sample_shape
             and not r.error and not b.results[l].error]
    if not shared and not timed:
        raise FlametoolError(f"{run_a} and {run_b} have no case in common; name one with --case")
    return (shared or timed)[0]


@dataclass
class Change:
    """What a diff leads with and --fail-above decides on: head against base as a ratio with its 95% interval,
    anchored where it can be (the anchor timed beside the case on both sides cancels the host's speed)."""

    ratio: float | None
    interval: stats.Interval | None
    how: str  # in words: what the ratio is of
    anchored: stats.Anchored | None = None
    absolute: stats.PairFigures | None = None  # not anchored: the pooled times, head against base
    no_anchor: str | None = None  # why there is no anchor
    between_runs: bool = False  # two stored runs (diff RUN_A RUN_B): a decision needs a new run


@dataclass
class Verdict:
    """--fail-above PCT on a change: slower (its interval wholly above PCT), passed (wholly at or below it), or
    inconclusive (the interval holds PCT), with the processes a side that would settle it at the spread seen."""

    outcome: str  # "slower", "passed", "inconclusive"
    exit_code: int
    threshold: float  # PCT
    sentence: str
    processes: int | None = None


def verdict(change: Change, label: str, pct: float) -> Verdict:
    """Decided on the interval, not the point: a change whose interval reaches above PCT may still be noise."""
    if change.ratio is None:
        return Verdict("inconclusive", INCONCLUSIVE_EXIT, pct, f"{label}: nothing to compare; inconclusive")
    grew, iv = (change.ratio - 1) * 100, change.interval
    limit = 1 + pct / 100
    if iv is None:  # one process a side: no interval to decide on, only the point
        slower = grew > pct
        return Verdict("slower" if slower else "passed", SLOWER_EXIT if slower else 0, pct,
                       f"{label}: {grew:+.1f}% {change.how} (no interval: one process a side, decided on the point; "
                       f"{'more' if slower else 'not more'} than --fail-above {pct:g}%)")
    span = f"{grew:+.1f}% (95%: {(iv.low - 1) * 100:+.1f}% to {(iv.high - 1) * 100:+.1f}%) {change.how}"
    if iv.low > limit:
        return Verdict("slower", SLOWER_EXIT, pct, f"{label}: {span}: slower by more than --fail-above {pct:g}%")
    if iv.high <= limit:
        return Verdict("passed", 0, pct, f"{label}: {span}: within --fail-above {pct:g}%")
    need = change.anchored.processes_to_settle(limit) if change.anchored is not None else None
    again = (f"; to decide it, time both builds in one run: flametool compare --env A=PYTHON_A --env B=PYTHON_B "
             f"--fail-above {pct:g} adds processes until it is decided (--budget SECONDS bounds it)"
             if change.between_runs else
             f"; to decide it, compare again with --fail-above {pct:g} (it adds processes until the verdict is decided) "
             "and a longer --budget SECONDS" if change.anchored is not None else "")
    return Verdict("inconclusive", INCONCLUSIVE_EXIT, pct,
                   f"{label}: {span}: inconclusive, the interval holds --fail-above {pct:g}%; "
                   + (f"about {need} processes a side would settle it at the spread seen" if need else
                      "more processes would not settle it at this spread, unless the estimate moves"
                      if change.anchored is not None else
                      "an anchor (a case timed beside it in both runs) would settle it") + again, need)


def anchor_for(a: Run, b: Run, label: str, given: str | None) -> tuple[str | None, str | None]:
    """(the anchor, or None and why): a case both runs have, timed in the same processes as `label` in each
    (the runs' own anchor first, for a run of `compare --env`)."""
    def beside(run: Run, x: str) -> bool:
        return x in run.results and x != label and not run.results[x].error and run.paired(label, x)

    if given is not None:
        for name, run in (("RUN_A", a), ("RUN_B", b)):
            if not beside(run, given):
                raise FlametoolError(f"--anchor {given!r}: not a case timed beside {label!r} in {name}")
        return given, None
    preferred = [x for x in (a.anchor_beside(label), b.anchor_beside(label)) if x]
    candidates = preferred + [x for x in a.results if x not in preferred]
    found = next((x for x in candidates if beside(a, x) and beside(b, x)), None)
    if found is None:
        return None, (f"no anchor: no other case was timed beside {label} in both runs, so the change is the "
                      "absolute one and carries the host's own drift between runs")
    return found, None


def run_change(a: Run, b: Run, label: str, anchor: str | None, no_anchor: str | None) -> Change:
    """`label` in run A (base) and run B (head), relative to `anchor` (at the sample shape)."""
    pa, pb = stats.group_pooled(a, True, intervals=False), stats.group_pooled(b, True, intervals=False)
    ta, tb = a.results[label].at_sample_shape, b.results[label].at_sample_shape
    assert ta is not None and tb is not None  # diff_runs: timed in both runs
    if anchor is not None:
        xa, xb = a.results[anchor].at_sample_shape, b.results[anchor].at_sample_shape
        assert xa is not None and xb is not None  # anchor_for: timed beside it in both runs
        got = stats.anchored(label, anchor, (ta, xa), (tb, xb),
                             pa[label].us if label in pa else None,
                             (pa[anchor].us, pb[anchor].us) if anchor in pa and anchor in pb else None,
                             pb[label].us if label in pb else None)
        if got is not None:
            return Change(got.ratio, got.ratio_interval, f"relative to {anchor}", got, got.absolute, between_runs=True)
        no_anchor = f"no anchor: {anchor} has no loops to compare in one of the runs"
    # the pooled times every view shows
    absolute = stats.apart(label, (ta,), label, (tb,), pa[label].us if label in pa else None,
                           pb[label].us if label in pb else None)
    return Change(absolute.ratio, absolute.ratio_interval, "absolute (not anchored)", None, absolute, no_anchor,
                  between_runs=True)


@dataclass(frozen=True)
class Difference:
    """Something the two runs of a diff did not do alike: `unlike` when it is the work itself (op, shape,
    dtype, device: a ratio of such runs measures the work, not the launch path, and gets no verdict unless
    asked), else a library version (what a diff of two builds is for, stated beside the figures)."""

    what: str  # "op", "shape", "sampled shape", "dtype", "device", "factory", "torch version", ...
    base: str  # as run A has it
    head: str  # as run B has it
    unlike: bool
    note: str = ""

    def __str__(self) -> str:
        return f"{self.what} {self.base} in A, {self.head} in B" + (f" ({self.note})" if self.note else "")


def _shape(shape) -> str:
    return ",".join(str(x) for x in shape) if shape else "none"


def _version(run: Run, label: str) -> tuple[str | None, str | None]:
    """(the library of case `label`, its version where the case ran: its environment's, else flametool's own)."""
    r = run.results[label]
    if not r.library:
        return None, None
    where = run.environment(r.env)
    versions = where.versions if where is not None else run.env.versions
    return r.library, versions.get(r.library)


def differences(a: Run, b: Run, label: str, anchor: str | None) -> list[Difference]:
    """What run A and run B did not do alike for `label` (and its library's and the anchor's versions)."""
    ra, rb = a.results[label], b.results[label]
    out = [Difference(what, x, y, True) for what, x, y in (
        ("op", a.config.operation, b.config.operation),
        ("factory", ra.factory.rsplit(":", 1)[-1], rb.factory.rsplit(":", 1)[-1]),
        ("shape", _shape(ra.sample_shape), _shape(rb.sample_shape)),  # the shape the change is taken at
        ("dtype", ra.dtype, rb.dtype),
        ("device", ra.device, rb.device),
        ("operations per step", str(ra.ops_per_step), str(rb.ops_per_step))) if x != y]
    if any(d.what == "op" for d in out):  # a built-in case's factory is named after its op
        out = [d for d in out if d.what != "factory"]
    if ra.shape != rb.shape and ra.sample_shape == rb.sample_shape:  # both compared at the same sampled shape
        out.append(Difference("requested shape", _shape(ra.shape), _shape(rb.shape), False,
                              f"both compared at {_shape(ra.sample_shape)}"))
    for case in dict.fromkeys(x for x in (label, anchor) if x):
        (lib_a, va), (lib_b, vb) = _version(a, case), _version(b, case)
        if lib_a and lib_a == lib_b and va != vb:
            out.append(Difference(f"{lib_a} version" + (" (the anchor's)" if case != label else ""),
                                  va or "none", vb or "none", False))
    return out


@dataclass
class DiffResult:
    """`flametool diff`: one case in two runs, or two cases of one run (`cases`, (base, head)), head - base."""

    label: str  # what is compared: the case, or "HEAD - BASE"
    base_run: str
    head_run: str
    same_shape_and_dtype: bool
    figures: diff.PairDiff | None  # the layers and frames, head - base (None: not both sampled)
    cases: tuple[str, str] | None = None
    change: Change | None = None  # what it leads with, and --fail-above decides on
    not_sampled: str | None = None  # why there are no layers and frames
    counts: countdiff.CountDiff | None = None  # what a step does, counted, head - base (exact; before any time)
    differences: list[Difference] = field(default_factory=list)  # two runs: what they did not do alike
    incomplete: list[str] = field(default_factory=list)  # the runs ("A", "B"; the run) that did not finish

    @property
    def unlike(self) -> list[Difference]:
        """The differences of the work itself: a verdict on them would judge the work, not the launch path."""
        return [d for d in self.differences if d.unlike]

    @property
    def base_us_per_call(self) -> float:
        assert self.figures is not None  # read only where both were sampled
        return self.figures.base_us_per_call

    @property
    def head_us_per_call(self) -> float:
        assert self.figures is not None  # read only where both were sampled
        return self.figures.head_us_per_call

    @property
    def ratio(self) -> float | None:
        assert self.figures is not None  # read only where both were sampled
        return self.figures.ratio


def diff_runs(run_a: Path, run_b: Path, case: str | None, view: str = "caller", anchor: str | None = None) -> DiffResult:
    """The same case in two runs, base = RUN_A, head = RUN_B, relative to an anchor both runs timed beside it;
    nothing is written."""
    a, b = rundir.load_profiled(run_a, "diff"), rundir.load_profiled(run_b, "diff")
    label = common_case(run_a, a, run_b, b, case)
    for name, run in (("RUN_A", a), ("RUN_B", b)):
        if run.results[label].error or run.results[label].at_sample_shape is None:
            raise FlametoolError(f"--case {label!r}: it has no timings in {name} (it failed there)")
    found, why = anchor_for(a, b, label, anchor)
    change = run_change(a, b, label, found, why)
    if Path(run_a).resolve() == Path(run_b).resolve() and change.ratio is not None:
        # one run on both sides: its processes are the same units, each with a change of exactly nothing
        change.interval = stats.Interval(change.ratio, change.ratio, "the same run on both sides")
    sampled = label in attribution.sampled_labels(a) and label in attribution.sampled_labels(b)
    figures = None
    if sampled:  # anchored: both runs' samples at their common speed, as the change it leads with
        figures = anchored_diff(attribution.load_profile(run_a, a, label), attribution.load_profile(run_b, b, label),
                                change.anchored, view, ("A", "B"))
    shapes = [(d.results[label].sample_shape, d.results[label].dtype) for d in (a, b)]
    return DiffResult(label, str(run_a), str(run_b), shapes[0] == shapes[1], figures, change=change,
                      not_sampled=None if sampled else f"{label} was not sampled in both runs: no layers or frames to compare",
                      counts=countdiff.diff_counts(counts_of(a, label), counts_of(b, label), "A", "B"),
                      differences=differences(a, b, label, found),
                      incomplete=[name for name, run in (("A", a), ("B", b)) if not run.complete])


def diff_cases(run_dir: Path, base: str, head: str, view: str = "caller") -> DiffResult:
    """Two cases of one run, head - base; nothing is written."""
    run = rundir.load_profiled(run_dir, "diff")
    for label in (base, head):
        if label not in run.results:
            raise FlametoolError(f"--base/--head {label!r}: no such case in {run_dir} "
                                 f"(cases: {', '.join(run.results) or 'none'})")
    rb, rh = run.results[base], run.results[head]
    for label, r in ((base, rb), (head, rh)):
        if r.error or r.at_sample_shape is None:
            raise FlametoolError(f"--base/--head {label!r}: it has no timings in {run_dir} (it failed there)")
    pooled = stats.group_pooled(run, True, intervals=False)
    got = stats.anchored_pair(run, base, head, pooled)
    # two environments: both sides' samples at their common speed, as in the run's own report; a run (or a case)
    # that was not sampled still has its ratio, as `diff RUN_A RUN_B` and `summary` give it
    sampled = base in attribution.sampled_labels(run) and head in attribution.sampled_labels(run)
    figures = anchored_diff(attribution.load_profile(run_dir, run, base), attribution.load_profile(run_dir, run, head),
                            got, view, (base, head), cross_library(rb, rh)) if sampled else None
    if got is not None:
        change = Change(got.ratio, got.ratio_interval, f"relative to {got.anchor}", got, got.absolute)
    else:
        sb, sh = rb.at_sample_shape, rh.at_sample_shape
        assert sb is not None and sh is not None  # load_profile: both have times at the sampled shape
        f = stats.pair(base, sb, head, sh, run.paired(base, head),
                       base_us=pooled[base].us if base in pooled else None)
        change = Change(f.ratio, f.ratio_interval, "paired in the same processes" if f.paired else "not paired", None, f)
    return DiffResult(f"{head} - {base}", str(run_dir), str(run_dir),
                      (rb.sample_shape, rb.dtype) == (rh.sample_shape, rh.dtype), figures, (base, head), change,
                      not_sampled=None if sampled else f"{base} and {head} were not both sampled: no layers or frames to "
                                                       "compare",
                      incomplete=[] if run.complete else ["the run"],
                      counts=countdiff.diff_counts(counts_of(run, base), counts_of(run, head), base, head))
