"""`flametool diff`: one case in two runs (diff_runs) or two cases of one run (diff_cases), head - base. What it
leads with is the change (Change: a ratio with its interval, anchored where it can be) and the verdict on it that
--fail-above asks for (Verdict, also what `compare` and `summary` decide on); then what a step does, counted, and the
layers and frames (treediff.PairDiff). Nothing here writes: every view computes it afresh from the run directories."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path

from . import attribution, countdiff, treediff
from ..run import anchoring, casenames, rundir, sameness, sources, stats
from ..errors import FlametoolError
from .lines import LineDelta, case_lines, diff_lines
from .compare import at_common_speed, count_pair, cross_library, speed_heading, step_source
from ..run.record import Run

# diff exits with SLOWER_EXIT when the head got slower than --fail-above allows (2 is bad input, 1 a failed case),
# INCONCLUSIVE_EXIT when the interval holds the threshold (set in errors.py, which the options' help reads)
from ..errors import INCONCLUSIVE_EXIT, SLOWER_EXIT  # noqa: E402


def anchored_diff(base: attribution.Profile, head: attribution.Profile, anchored: anchoring.Anchored | None, view: str,
                  names: tuple[str, str], by_role: bool = False) -> treediff.PairDiff:
    """treediff.diff of two profiles, both at the pair's common speed when the comparison is anchored, the tables
    told so under `names` (base, head): `flametool diff` of two runs, or of two cases of one run."""
    return treediff.diff(*at_common_speed(base, head, anchored), view, at_speed=speed_heading(anchored, *names),
                     by_role=by_role)


def line_diff(base_dir: Path, base_run: Run, base: str, head_dir: Path, head_run: Run, head: str,
              anchored: anchoring.Anchored | None, one_case: bool = False) -> list[LineDelta]:
    """The lines of two sampled cases (of one run or two), head - base, at their common speed when anchored,
    each side's texts from its own run's record; `one_case`: one case in two runs (lines.diff_lines)."""
    b, h = at_common_speed(attribution.load_profile(base_dir, base_run, base, by_line=True),
                           attribution.load_profile(head_dir, head_run, head, by_line=True), anchored)
    same = Path(base_dir).resolve() == Path(head_dir).resolve()
    record_b = sources.load(base_dir)
    return diff_lines(case_lines(b, record_b, step_source=step_source(base_run, base)),
                      case_lines(h, record_b if same else sources.load(head_dir),
                                 step_source=step_source(head_run, head)),
                      one_case=one_case)


def common_case(run_a: Path, a: Run, run_b: Path, b: Run, case: str | None) -> str:
    if case is not None:  # a sweep's case at a size too: cupy@1024 (casenames), named alike in both
        casenames.case_named(run_b, b, case, "--case", profiled=False)
        return casenames.case_named(run_a, a, case, "--case", profiled=False)
    shared = [l for l in attribution.sampled_labels(a) if l in attribution.sampled_labels(b)]
    timed = [l for l, r in a.results.items() if l in b.results and r.at_sample_shape and b.results[l].at_sample_shape
             and not r.error and not b.results[l].error]
    if not shared and not timed:
        both = [l for l in a.results if l in b.results]
        if not both:
            raise FlametoolError(f"{run_a} and {run_b} have no case in common; name one with --case")
        why = [f"{name} {not_timed(run)}" for name, run in ((run_a, a), (run_b, b))
               if not any(run.results[l].at_sample_shape and not run.results[l].error for l in both)]
        raise FlametoolError(f"{run_a} and {run_b} have no case timed in both ({', '.join(both)} in each"
                             + (f"; {' and '.join(why)}" if why else "") + ")")
    return (shared or timed)[0]


def not_timed(run: Run) -> str:
    """Why a run's cases have no timings, in words: it ended before they were timed, or they failed."""
    return "ended before they were timed (run.json is incomplete)" if not run.complete else "had them fail"


@dataclass
class Change:
    """What a diff leads with and --fail-above decides on: head against base as a ratio with its 95% interval,
    anchored where it can be (the anchor timed beside the case on both sides cancels the host's speed)."""

    ratio: float | None
    interval: stats.Interval | None
    how: str  # in words: what the ratio is of
    anchored: anchoring.Anchored | None = None
    absolute: stats.PairFigures | None = None  # not anchored: the pooled times, head against base
    no_anchor: str | None = None  # why there is no anchor
    between_runs: bool = False  # two stored runs (diff RUN_A RUN_B): a decision needs a new run
    # two stored runs: the interpreter the case ran under in each (interpreter()), for the advice to time both in
    # one run (envs_options); "" where a run did not record it
    pythons: tuple[str, str] = ("", "")
    # what the anchor's own change carries besides the host's speed: its library changed version between the runs
    # (DiffResult.anchor_moved) or differs between a run's environments (run.sameness.anchor_caution); every view
    # then says the anchor's change may be that library's (render/format.host_moved), and a verdict ends with it
    anchor_caution: Difference | str | None = None

    @property
    def reach(self) -> float | None:
        """How far its interval reaches from the ratio (stats.reach_of): whether a timing stop applies to the pair
        (summary.of_run) and the sentence that says it (summary_formats.stop_text) read this one figure."""
        return stats.reach_of(self.ratio, self.interval)


@dataclass
class Verdict:
    """--fail-above PCT on a change: slower (its interval wholly above PCT), passed (wholly at or below it), or
    inconclusive (the interval holds PCT), with the processes a side that would settle it at the spread seen."""

    outcome: str  # "slower", "passed", "inconclusive"
    exit_code: int
    threshold: float  # PCT
    sentence: str
    processes: int | None = None


# What ended a run whose verdict is undecided, for its advice (Verdict's sentence): its --fail-above budget ran out
# (or a stored run of two: nothing known), it was made without --fail-above (nothing ran out: --fail-above adds the
# processes), or it did not finish (interrupted, or a failure part-way)
ENDED = ("budget", "unasked", "unfinished")


def verdict(change: Change, label: str, pct: float, caution: Difference | str | None = None,
            most: int | None = None, ended: str = "budget", spent: float | None = None) -> Verdict:
    """Decided on the interval, not the point: a change whose interval reaches above PCT may still be noise.
    `caution`: the anchor's library changed version between the runs (DiffResult.anchor_moved), or differs between
    a run's environments (run.sameness.anchor_caution), which the sentence ends with, as the diff's differences (the
    run's cautions) say it: the verdict is of the change relative to it. `most`: the
    most processes compare runs (a side), where it stopped there undecided (the run's TimingStop, reason "most"):
    a longer --budget would not add one, a larger --processes would. `ended`: what ended the run (ENDED), which the
    advice of an undecided verdict names: 'a longer --budget' only where the budget ran out. `spent`: the seconds
    the run's timing processes took where its budget ran out (summary.timing_seconds), from which that advice names
    a budget for the processes that would settle it."""
    got = decided(change, label, pct, most, ended, spent)
    if caution is not None:
        got.sentence += f"; caution: {caution}"
    return got


def not_paired(change: Change) -> bool:
    """A run's pair not timed in the same processes (--isolate, or a case that could not share them): compare adds
    no process to decide it (measure/paired.py adds them for a paired or anchored pair), so --budget and
    --fail-above would not; more --processes would."""
    return (not change.between_runs and change.anchored is None and change.absolute is not None
            and not change.absolute.paired)


def decided(change: Change, label: str, pct: float, most: int | None = None, ended: str = "budget",
            spent: float | None = None) -> Verdict:
    """verdict, without its caution."""
    # how compare adds the processes, and why this run did not: its budget ran out, it was not asked, it ended early
    adds = {"budget": " and a longer --budget SECONDS", "unasked": "",
            "unfinished": "; this run did not finish (run.json complete: false)"}[ended]
    if change.ratio is None:
        return Verdict("inconclusive", INCONCLUSIVE_EXIT, pct, f"{label}: nothing to compare; inconclusive")
    grew, iv = (change.ratio - 1) * 100, change.interval
    limit = 1 + pct / 100
    few = one_process(change)
    unpaired = not_paired(change)
    if iv is None or few:
        # one process a side: its rounds share the process's own speed, so their spread is not the spread between
        # processes, and a verdict on them would be firmer with less evidence than with two processes a side
        span = (f"{grew:+.1f}% (95%: {(iv.low - 1) * 100:+.1f}% to {(iv.high - 1) * 100:+.1f}%)" if iv is not None
                else f"{grew:+.1f}%")
        return Verdict("inconclusive", INCONCLUSIVE_EXIT, pct,
                       f"{label}: {span} {change.how}: inconclusive, {few or 'no interval to decide on'}: a verdict on "
                       f"--fail-above {pct:g}% needs two or more processes a side; "
                       + (f"time both builds in one run: flametool compare {envs_options(change)} "
                          f"--fail-above {pct:g}" if change.between_runs else
                          f"compare again with --processes 2 or more ({UNPAIRED})" if unpaired else
                          f"compare again with --fail-above {pct:g}{adds} (or --processes 2 or more)"))
    span = f"{grew:+.1f}% (95%: {(iv.low - 1) * 100:+.1f}% to {(iv.high - 1) * 100:+.1f}%) {change.how}"
    if iv.low > limit:
        return Verdict("slower", SLOWER_EXIT, pct, f"{label}: {span}: slower by more than --fail-above {pct:g}%")
    if iv.high <= limit:
        return Verdict("passed", 0, pct, f"{label}: {span}: within --fail-above {pct:g}%")
    need = change.anchored.processes_to_settle(limit) if change.anchored is not None else None
    a_side = " a side" if change.anchored is not None else ""
    if ended == "budget" and need and spent is not None and change.anchored is not None:
        adds = longer_budget(need, spent, anchoring.processes_a_side(change.anchored)) or adds
    again = (f"; to decide it, time both builds in one run: flametool compare {envs_options(change)} "
             f"--fail-above {pct:g} adds processes until it is decided (--budget SECONDS bounds it)"
             if change.between_runs else
             # --processes past the most lifts it (commands/settings: the most is the larger of the two)
             f"; to decide it, compare again with --fail-above {pct:g} --processes {need} (this run stopped at the "
             f"most processes compare runs, {most}{a_side}; a longer --budget would not add one)" if most and need else
             f"; to decide it, compare again with --fail-above {pct:g} (it adds processes until the verdict is "
             f"decided){adds}" if change.anchored is not None and need else "")
    return Verdict("inconclusive", INCONCLUSIVE_EXIT, pct,
                   f"{label}: {span}: inconclusive, the interval holds --fail-above {pct:g}%; "
                   + (f"about {need} processes a side would settle it at the spread seen" if need else
                      "more processes would not settle it at this spread, unless the estimate moves"
                      if change.anchored is not None else
                      "an anchor (a case timed beside it in both runs) would settle it" if change.between_runs else
                      f"more processes would settle it: compare again with more --processes ({UNPAIRED})" if unpaired
                      else f"more processes would settle it: compare again with --fail-above {pct:g} and --processes "
                      f"over {most} (this run stopped at the most processes compare runs, {most})" if most
                      else f"more processes would settle it: compare again with --fail-above {pct:g} (it adds processes "
                      "until the verdict is decided)") + again, need)


def longer_budget(need: int, spent: float, ran: int) -> str | None:
    """The advice's budget for `need` processes a side, at the pace of this run's `ran` a side (`spent`: the seconds
    they took, summary.timing_seconds: the budget counts from the first timing process and bounds them all,
    measure/paired.py), rounded up to 10 s (to a minute past five minutes); None where that is not longer."""
    each = spent / max(ran, 1)
    step = 10 if need * each <= 300 else 60
    seconds = math.ceil(need * each / step) * step
    if seconds <= spent:
        return None
    return f" and a longer budget, --budget {seconds} ({need} processes a side at this run's {each:.1f} s a process a side)"


def envs_options(change: Change) -> str:
    """compare's --env options that time a diff's two builds in one run: each run's interpreter (Change.pythons),
    shell-quoted; placeholders where a run did not record one, or both ran under the same one (what told the builds
    apart was not the interpreter: a PYTHONPATH, an install changed between the runs)."""
    a, b = change.pythons
    if not a or not b or a == b:
        return "--env A=PYTHON_A --env B=PYTHON_B"
    return f"--env A={rundir.shell_word(a)} --env B={rundir.shell_word(b)}"


def interpreter(run: Run, label: str) -> str:
    """The interpreter case `label` ran under, as its run recorded it: its environment's (`compare --env`: as given,
    what ran its processes), else flametool's own (sys.executable: its processes run under it); "" where not
    recorded."""
    where = run.environment(run.results[label].env)
    return (where.python or where.executable) if where is not None else run.env.executable


# what compare does for a pair whose cases were not timed in the same processes, where a verdict's advice says it
UNPAIRED = "compare adds no processes to decide a pair not timed in the same processes"


def one_process(change: Change) -> str | None:
    """Why the change's interval cannot decide a verdict (one process on a side, its rounds the units), or None."""
    figures = change.anchored if change.anchored is not None else change.absolute
    if figures is None or anchoring.processes_a_side(figures) >= 2:
        return None
    return "one process a side (its rounds share that process's own speed)"


def anchor_for(a: Run, b: Run, label: str, given: str | None) -> tuple[str | None, str | None]:
    """(the anchor, or None and why): a case both runs have, timed in the same processes as `label` in each.
    Without --anchor (`given`), one whose library is at one version in both runs (as each recorded it,
    versions_of) before one not known (no library recorded), and one whose library changed version between the
    runs last: an anchor on the library that changed reads its change as the host's speed (a diff of two default
    compares, cupy rebuilt, read torch relative to cupy). Within each, the runs' own anchor first (a run of
    `compare --env`), then run A's order. One whose version changed is still the anchor where no other is there,
    and differences() says what that does to the change."""
    def beside(run: Run, x: str) -> bool:  # and timed there: a run that ended before its timings has none
        return (x in run.results and x != label and not run.results[x].error
                and run.results[x].at_sample_shape is not None and run.paired(label, x))

    if given is not None:
        for name, run in (("RUN_A", a), ("RUN_B", b)):
            if not beside(run, given):
                raise FlametoolError(f"--anchor {given!r}: not a case timed beside {label!r} in {name}")
        return given, None
    preferred = [x for x in (a.anchor_beside(label), b.anchor_beside(label)) if x]
    candidates = [x for x in dict.fromkeys(preferred + list(a.results)) if beside(a, x) and beside(b, x)]
    if not candidates:
        return None, (f"no anchor: no other case was timed beside {label} in both runs, so the change is the "
                      "absolute one and carries the host's own drift between runs")
    return min(candidates, key=lambda x: version_rank(a, b, x)), None  # min: the first of the lowest rank


def versions_of(a: Run, b: Run, case: str) -> tuple[str, str | None, str | None] | None:
    """(the library of `case`, its version in run A, in run B) as each run recorded it (_version), where both
    runs name one library for it; else None (its library not known)."""
    (lib_a, va), (lib_b, vb) = _version(a, case), _version(b, case)
    return (lib_a, va, vb) if lib_a and lib_a == lib_b else None


def version_rank(a: Run, b: Run, case: str) -> int:
    """0: the library of `case` is at one version in both runs; 1: not known; 2: its version changed."""
    v = versions_of(a, b, case)
    if v is None or (v[1] is None and v[2] is None):
        return 1
    return 0 if v[1] == v[2] else 2


def run_change(a: Run, b: Run, label: str, anchor: str | None, no_anchor: str | None) -> Change:
    """`label` in run A (base) and run B (head), relative to `anchor` (at the sample shape)."""
    pa, pb = stats.group_pooled(a, True, intervals=False), stats.group_pooled(b, True, intervals=False)
    ta, tb = a.results[label].at_sample_shape, b.results[label].at_sample_shape
    assert ta is not None and tb is not None  # diff_runs: timed in both runs
    pythons = (interpreter(a, label), interpreter(b, label))
    if anchor is not None:
        xa, xb = a.results[anchor].at_sample_shape, b.results[anchor].at_sample_shape
        assert xa is not None and xb is not None  # anchor_for: timed beside it in both runs
        got = anchoring.anchored(label, anchor, (ta, xa), (tb, xb),
                             pa[label].us if label in pa else None,
                             (pa[anchor].us, pb[anchor].us) if anchor in pa and anchor in pb else None,
                             pb[label].us if label in pb else None)
        if got is not None:
            return Change(got.ratio, got.ratio_interval, f"relative to {anchor}", got, got.absolute, between_runs=True,
                          pythons=pythons)
        no_anchor = f"no anchor: {anchor} has no loops to compare in one of the runs"
    # the pooled times every view shows
    absolute = stats.apart(label, (ta,), label, (tb,), pa[label].us if label in pa else None,
                           pb[label].us if label in pb else None)
    return Change(absolute.ratio, absolute.ratio_interval, "absolute (not anchored)", None, absolute, no_anchor,
                  between_runs=True, pythons=pythons)


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
    anchor: bool = False  # the anchor's: what the change is relative to moved too (a verdict on it says so)

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


def differences(a: Run, b: Run, label: str, anchor: str | None, given: bool = False) -> list[Difference]:
    """What run A and run B did not do alike for `label` (and its library's and the anchor's versions: the
    anchor's, with what it does to the change; `given`: the anchor is --anchor's, not anchor_for's default)."""
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
        v = versions_of(a, b, case)
        if v is None or v[1] == v[2]:
            continue
        lib, va, vb = v
        if case == label:
            out.append(Difference(f"{lib} version", va or "none", vb or "none", False))
            continue
        # the anchor's version changed (anchor_for's default only where no other case was there, or --anchor's):
        # its own change is not the host's speed alone, and the change relative to it carries its library's change
        note = (f"the anchor's own change is the host's speed and {lib}'s change together, and the change relative "
                f"to {case} carries both" + ("" if given else f"; no other case timed beside {label} in both runs has "
                                                               "its library at one version in both"))
        out.append(Difference(f"{lib} version (the anchor's)", va or "none", vb or "none", False, note, anchor=True))
    return out


@dataclass
class DiffResult:
    """`flametool diff`: one case in two runs, or two cases of one run (`cases`, (base, head)), head - base."""

    label: str  # what is compared: the case, or "HEAD - BASE"
    base_run: str
    head_run: str
    same_shape_and_dtype: bool
    figures: treediff.PairDiff | None  # the layers and frames, head - base (None: not both sampled)
    cases: tuple[str, str] | None = None
    change: Change | None = None  # what it leads with, and --fail-above decides on
    not_sampled: str | None = None  # why there are no layers and frames
    counts: countdiff.CountDiff | None = None  # what a step does, counted, head - base (exact; before any time)
    differences: list[Difference] = field(default_factory=list)  # two runs: what they did not do alike
    incomplete: list[str] = field(default_factory=list)  # the runs ("A", "B"; the run) that did not finish
    lines: list[LineDelta] | None = None  # the source lines, head - base (None: not both sampled)
    shape: list[int] | None = None  # the shape the change is taken at (both sides' sample shape; None: they differ)

    @property
    def unlike(self) -> list[Difference]:
        """The differences of the work itself: a verdict on them would judge the work, not the launch path."""
        return [d for d in self.differences if d.unlike]

    @property
    def anchor_moved(self) -> Difference | None:
        """The anchor's library changed version between the two runs: the change relative to it carries that
        library's change (differences() says so), which a verdict on the change says too."""
        return next((d for d in self.differences if d.anchor), None)

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


def no_change(change: Change) -> None:
    """One run on both sides: its processes are the same units, each with a change of exactly nothing, so each
    interval of the change is its figure alone: the one --fail-above decides on and those every view prints
    (the text printed the anchored ratio's 0.980 to 1.021 where JSON and markdown printed 1.000 to 1.000)."""
    def point(v: float | None) -> stats.Interval | None:
        return None if v is None else stats.Interval(v, v, "the same run on both sides")

    def still(f: stats.PairFigures) -> stats.PairFigures:
        return replace(f, ratio_interval=point(f.ratio), diff_interval=point(f.diff_us))

    change.interval = point(change.ratio)
    if change.anchored is not None:
        a = change.anchored
        change.anchored = replace(a, ratio_interval=point(a.ratio), diff_interval=point(a.diff_us),
                                  absolute=still(a.absolute))
    if change.absolute is not None:
        change.absolute = still(change.absolute)


def diff_runs(run_a: Path, run_b: Path, case: str | None, view: str = "caller", anchor: str | None = None) -> DiffResult:
    """The same case in two runs, base = RUN_A, head = RUN_B, relative to an anchor both runs timed beside it;
    nothing is written."""
    a, b = rundir.load_profiled(run_a, "diff"), rundir.load_profiled(run_b, "diff")
    swept = [run for run, data in ((run_a, a), (run_b, b)) if isinstance(data, casenames.SweepCases)]
    if len(swept) == 1:  # a compare run's cupy and a sweep's cupy@1024 are no one case: its names are per size
        other = run_b if swept[0] == run_a else run_a
        raise FlametoolError(f"diff {run_a} {run_b}: {swept[0]} is a sweep (its profiles are CASE@SIZE) and {other} "
                             "a compare run: no case is in both; diff two sweeps (--case CASE@SIZE), or two compare runs")
    label = common_case(run_a, a, run_b, b, case)
    for name, run in (("RUN_A", a), ("RUN_B", b)):
        if run.results[label].error or run.results[label].at_sample_shape is None:
            cause = "it failed there" if run.results[label].error or run.complete else \
                "the run ended before it was timed: run.json is incomplete"
            raise FlametoolError(f"--case {label!r}: it has no timings in {name} ({cause})")
    found, why = anchor_for(a, b, label, anchor)
    change = run_change(a, b, label, found, why)
    if Path(run_a).resolve() == Path(run_b).resolve() and change.ratio is not None:
        no_change(change)
    sampled = label in attribution.sampled_labels(a) and label in attribution.sampled_labels(b)
    figures = None
    if sampled:  # anchored: both runs' samples at their common speed, as the change it leads with
        figures = anchored_diff(attribution.load_profile(run_a, a, label), attribution.load_profile(run_b, b, label),
                                change.anchored, view, ("A", "B"))
    shapes = [(d.results[label].sample_shape, d.results[label].dtype) for d in (a, b)]
    used = change.anchored.anchor if change.anchored is not None else None  # not one without loops to compare
    result = DiffResult(label, str(run_a), str(run_b), shapes[0] == shapes[1], figures, change=change,
                      not_sampled=None if sampled else f"{label} was not sampled in both runs: no layers or frames to compare",
                      counts=count_pair(a, label, b, label, ("A", "B")),
                      differences=differences(a, b, label, used, given=anchor is not None),
                      incomplete=[name for name, run in (("A", a), ("B", b)) if not run.complete])
    change.anchor_caution = result.anchor_moved
    if sampled:
        result.lines = line_diff(run_a, a, label, run_b, b, label, change.anchored, one_case=True)
    result.shape = one_shape(a.results[label].sample_shape, b.results[label].sample_shape)
    return result


def diff_cases(run_dir: Path, base: str, head: str, view: str = "caller") -> DiffResult:
    """Two cases of one run, head - base; nothing is written."""
    run = rundir.load_profiled(run_dir, "diff")
    base, head = (casenames.case_named(run_dir, run, label, option, profiled=False)
                  for label, option in ((base, "--base"), (head, "--head")))
    if base == head:  # named apart, one case: cupy@1024 and cupy@1024x1024x1024
        raise FlametoolError(f"diff RUN --base {base} --head {head}: one case against itself; name two different cases "
                             "of the run")
    rb, rh = run.results[base], run.results[head]
    for label, r in ((base, rb), (head, rh)):
        if r.error or r.at_sample_shape is None:
            cause = "it failed there" if r.error or run.complete else \
                "the run ended before it was timed: run.json is incomplete"
            raise FlametoolError(f"--base/--head {label!r}: it has no timings in {run_dir} ({cause})")
    pooled = stats.group_pooled(run, True, intervals=False)
    got = anchoring.anchored_pair(run, base, head, pooled)
    # two environments: both sides' samples at their common speed, as in the run's own report; a run (or a case)
    # that was not sampled still has its ratio, as `diff RUN_A RUN_B` and `summary` give it
    sampled = base in attribution.sampled_labels(run) and head in attribution.sampled_labels(run)
    figures = anchored_diff(attribution.load_profile(run_dir, run, base), attribution.load_profile(run_dir, run, head),
                            got, view, (base, head), cross_library(rb, rh)) if sampled else None
    if got is not None:  # an anchor that differs between the run's environments, as its own views say it
        change = Change(got.ratio, got.ratio_interval, f"relative to {got.anchor}", got, got.absolute,
                        anchor_caution=sameness.anchor_caution(run))
    else:
        sb, sh = rb.at_sample_shape, rh.at_sample_shape
        assert sb is not None and sh is not None  # load_profile: both have times at the sampled shape
        f = stats.pair(base, sb, head, sh, run.paired(base, head),
                       base_us=pooled[base].us if base in pooled else None)
        change = Change(f.ratio, f.ratio_interval, "paired in the same processes" if f.paired else "not paired", None, f)
    result = DiffResult(f"{head} - {base}", str(run_dir), str(run_dir),
                      (rb.sample_shape, rb.dtype) == (rh.sample_shape, rh.dtype), figures, (base, head), change,
                      not_sampled=None if sampled else f"{base} and {head} were not both sampled: no layers or frames to "
                                                       "compare",
                      incomplete=[] if run.complete else ["the run"],
                      counts=count_pair(run, base, run, head, (base, head)))
    if sampled:
        result.lines = line_diff(run_dir, run, base, run_dir, run, head, got)
    result.shape = one_shape(rb.sample_shape, rh.sample_shape)
    return result


def one_shape(base: list[int] | None, head: list[int] | None) -> list[int] | None:
    """The shape both sides' figures are at, or None where they are at two (the diff's differences say so)."""
    return list(base) if base and base == head else None
