"""What `flametool summary RUN` and `diff --format markdown|json` say, computed once (render/summary_formats.py lays it
out as text, Markdown or JSON): each compared pair's headline figures with their intervals (relative to the
anchor where there is one), the largest layer and frame differences, and the --fail-above verdict."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from ..run import anchoring, sameness, stats
from .compare import Analysis, PairAnalysis
from .diff import INCONCLUSIVE_EXIT, Change, DiffResult, Verdict, verdict
from .aligned import Aligned
from .atlas import AtlasAnalysis
from .countdiff import CountDiff
from .lines import LineDelta
from . import sweep
from .sweep import SweepAnalysis
from .treediff import FrameDelta, LayerDelta, PairDiff
from ..errors import FlametoolError
from ..run.record import Environment, Run, TimingStop, a_kind

# The JSON document's name and version (docs/summary-json.md): a field's meaning never changes within a version;
# fields may be added.
# 2: an anchored pair's difference_us, at_us and layer figures at the common speed of both sides' processes
# (1: at the base side's speed). 3: an anchored pair's ratio (and so its difference and verdict) is speed-adjusted
# with two or more processes a side (anchoring.Anchored.speed; `speed_adjustment` says what the adjustment did),
# and each pair's counts (what a step does, counted, exact: every count of both sides and every difference),
# and every layer and frame difference (layers, frames), not only the largest.
SCHEMA = "flametool-summary"
VERSION = 3


@dataclass
class PairSummary:
    """One comparison: head against base."""

    label: str  # what is compared, in words: "cupy@pr vs cupy@main", "cupy: B vs A"
    base: str
    head: str
    head_where: str  # where the head ran: "cupy@pr's processes", "B"
    change: Change  # the ratio that holds (anchored, or paired in the same processes), and the absolute one
    diff_us: float | None  # head - base, us per call, at base_us
    diff_interval: stats.Interval | None
    base_us: float | None  # the speed the difference is stated at, as the base's time per call there: its pooled
    # time (paired), or at the common speed of both sides' processes (anchored: Anchored.at_us)
    units: str  # what the ratio pools: "6 + 6 processes", "10 processes"
    largest_layer: LayerDelta | None = None
    largest_frame: FrameDelta | None = None
    not_sampled: str | None = None  # why there are no layer or frame differences
    verdict: Verdict | None = None
    counts: CountDiff | None = None  # what a step does, counted, head - base: first, exact
    layers: list[LayerDelta] = field(default_factory=list)  # every layer difference
    frames: list[FrameDelta] = field(default_factory=list)  # every frame difference, largest first
    lines: list[LineDelta] = field(default_factory=list)  # every source line, the largest difference first
    # compare stopped adding processes with this pair's interval wider than it settles at (run.timing_stop)
    stopped: TimingStop | None = None
    shape: list[int] | None = None  # the shape the figures are at (None: a diff whose sides are at two)
    requested_shape: list[int] | None = None  # a run's requested shape, where the figures are at the sample shape


@dataclass
class Summary:
    kind: str  # "run" (flametool summary RUN) or "diff" (flametool diff RUN_A RUN_B)
    base_run: str
    head_run: str  # the same as base_run for a run
    pairs: list[PairSummary] = field(default_factory=list)
    environments: list[Environment] = field(default_factory=list)
    cases: dict[str, stats.Pooled] = field(default_factory=dict)  # a run's cases, their pooled times
    counts: dict = field(default_factory=dict)  # a run's cases' counted loops (run.counts.Counts), by label
    complete: bool = True
    incomplete: list[str] = field(default_factory=list)  # a diff: the runs that did not finish ("A", "B")
    differences: list = field(default_factory=list)  # a diff of two runs: diff.Difference, what they did not do alike
    no_verdict: str | None = None  # why --fail-above gave no verdict (the runs measured unlike work)
    rows: list["HeadlineRow"] = field(default_factory=list)  # a sweep's or an atlas's: one per pair and size (or op)
    # --fail-above on a run with a pair it could not compare (or none): inconclusive, and why (never a pass)
    uncompared: Verdict | None = None
    not_compared: str | None = None  # a run's pairs that could not be compared, and why (with or without --fail-above)
    not_compared_cases: list[str] = field(default_factory=list)  # the cases of those pairs (failed_text: the others)
    failed: dict[str, str] = field(default_factory=dict)  # a run's cases that failed: label -> why, on one line
    aligned: Aligned | None = None  # a run's step lines its cases share, a column per case (analyse/aligned.py)
    # a run's analysis, for what the report says too: its cautions (render/format.cautions) and the shape of
    # each case's pooled time in `cases` (the sample shape)
    analysis: Analysis | None = None

    @property
    def verdict(self) -> Verdict | None:
        """The run's verdict: the worst of its pairs' (slower over inconclusive over passed), a pair not compared
        (or none at all) inconclusive."""
        rank = {"slower": 2, "inconclusive": 1, "passed": 0}
        given = [p.verdict for p in self.pairs if p.verdict is not None] + (
            [self.uncompared] if self.uncompared is not None else [])
        return max(given, key=lambda v: rank[v.outcome], default=None)

    @property
    def exit_code(self) -> int:
        return self.verdict.exit_code if self.verdict is not None else 0


def largest(d: PairDiff | None) -> tuple[LayerDelta | None, FrameDelta | None]:
    if d is None:
        return None, None
    layer = max(d.layers, key=lambda r: abs(r.delta_us_per_call), default=None)
    frame = next((r for r in d.frames if r.delta_us_per_call), None)  # the frames come largest first
    return (layer if layer is not None and layer.delta_us_per_call else None), frame


def pair_change(p: PairAnalysis) -> Change | None:
    """A run's pair as a diff leads with it: relative to the anchor (two environments), or the headline ratio."""
    if p.anchored is not None:
        a = p.anchored
        return Change(a.ratio, a.ratio_interval, f"relative to {a.anchor}", a, a.absolute)
    f = p.headline
    if f is None:
        return None
    return Change(f.ratio, f.ratio_interval, "paired in the same processes" if f.paired else "not paired", None, f)


def of_change(label: str, base: str, head: str, head_where: str, change: Change, d: PairDiff | None,
              fail_above: float | None, not_sampled: str | None, counts: CountDiff | None = None,
              lines: list[LineDelta] | None = None, stop: TimingStop | None = None,
              ended: str = "budget", spent: float | None = None) -> PairSummary:
    """`stop`: compare stopped adding processes before this pair's interval settled (run.timing_stop, where it
    applies): the pair's `stopped`, and its verdict's advice where the stop was the most processes. What the
    anchor's own change carries (Change.anchor_caution) the verdict ends with. `ended`: what ended the run
    (diff.ENDED), and `spent`, the seconds its timing took (timing_seconds), for an undecided verdict's advice."""
    a = change.anchored
    diff_us: float | None
    base_us: float | None
    if a is not None:
        diff_us, interval, base_us = a.diff_us, a.diff_interval, a.at_us
        units = f"{a.base_units} + {a.head_units} {a.unit_name}"
    else:
        f = change.absolute
        assert f is not None  # every Change has its absolute figures
        diff_us, interval, base_us = f.diff_us, f.diff_interval, f.base_us
        units = f"{f.units} {f.unit_name}"
    layer, frame = largest(d)
    most = stop.most if stop is not None and stop.reason == "most" else None
    return PairSummary(label, base, head, head_where, change, diff_us, interval, base_us, units, layer, frame,
                       not_sampled if d is None else None,
                       verdict(change, label, fail_above, change.anchor_caution, most, ended, spent) if fail_above is not None else None, counts,
                       list(d.layers) if d else [], list(d.frames) if d else [], list(lines or []), stopped=stop)


def of_run(a: Analysis, fail_above: float | None = None) -> Summary:
    run = a.run
    out = Summary("run", str(a.run_dir), str(a.run_dir), environments=list(run.environments), complete=run.complete,
                  cases=stats.group_pooled(run, True),
                  counts={l: r.profile.counts for l, r in run.results.items() if r.profile and r.profile.counts},
                  aligned=a.aligned, analysis=a, failed=failures(run))
    missing: list[tuple[str, str]] = []  # (base, head) of each pair not compared
    anchor_differs = sameness.anchor_caution(run)  # the run's anchor carries its own change: its verdicts say so
    ended = ended_by(run)
    for p in a.pairs:
        change = pair_change(p)
        if change is None:
            missing.append((p.base, p.head))
            continue
        change.anchor_caution = anchor_differs if p.anchored is not None else None
        # the seconds its processes took, for the budget an undecided verdict advises (anchored: its processes a side)
        spent = (timing_seconds(run, anchoring.processes_a_side(p.anchored))
                 if ended == "budget" and p.anchored is not None else None)
        stop = run.timing_stop
        pair = of_change(f"{p.head} vs {p.base}", p.base, p.head, f"{p.head}'s processes", change, p.diff, fail_above,
                         "not both sampled: no layer or frame differences", p.counts, a.pair_lines.get((p.base, p.head)),
                         ended=ended, spent=spent,
                         stop=stop if stop is not None and stop.applies(p.base, p.head, change.reach) else None)
        head = run.results[p.head]
        at_sample = p.anchored is not None or (p.sample is not None and p.headline is p.sample)
        pair.shape = head.sample_shape if at_sample else head.shape
        if at_sample and head.shape != head.sample_shape:
            pair.requested_shape = head.shape
        out.pairs.append(pair)
    if missing:  # said with or without --fail-above: a pair left out without a word read as never asked for
        out.not_compared = not_compared(run, missing)
        out.not_compared_cases = list(dict.fromkeys(l for pair in missing for l in pair))
    if fail_above is not None and (missing or not out.pairs):
        out.uncompared = Verdict("inconclusive", INCONCLUSIVE_EXIT, fail_above,
                                 nothing_compared(run, missing, fail_above))
    return out


def ended_by(run: Run) -> str:
    """What ended a run, as an undecided verdict's advice names it (diff.ENDED): it did not finish; it was made
    without --fail-above (run.json's config has none), so no budget ran out; else its --fail-above budget ran out
    (a decided pair needs no advice)."""
    if not run.complete:
        return "unfinished"
    return "budget" if run.config.fail_above is not None else "unasked"


def timing_seconds(run: Run, ran: int) -> float | None:
    """The seconds a run's timing processes took (at most), where its --budget (run.json's config) ran out with
    `ran` processes a side. measure/paired.py counts the budget from the first timing process and checks it only
    past --processes: a run that went past them stopped within its budget, so they took the budget; one that
    stopped at them may have run long past it (8 + 8 processes took 57 s of a 15 s budget), so they took at most
    the whole run, started to finished. None where the run recorded no budget, or that time is not known."""
    budget, least = run.config.recorded.get("budget"), run.config.processes
    if not isinstance(budget, (int, float)) or budget <= 0:
        return None
    if least is not None and ran > least:
        return float(budget)
    try:
        took = (datetime.fromisoformat(run.finished or "") - datetime.fromisoformat(run.started)).total_seconds()
    except ValueError:  # not finished, or a time not written as runner._now writes it
        return None
    return took if took > 0 else None


def failures(run: Run) -> dict[str, str]:
    """Each case that failed, and why, on one line."""
    return {l: " ".join(r.error.split()) for l, r in run.results.items() if r.error}


SAID_FAILED = 160  # characters of a failure's reason a sentence quotes (JSON's `failed` has it whole)


def failed_sentences(failed: dict[str, str]) -> list[str]:
    """'LABEL failed (why)' each, a long why cut in its middle: its start says what failed and its end where (a
    workload's ' at /me/w.py:58 (a[0] = 1.0)', which a cut at its end left out)."""
    def short(why: str) -> str:
        if len(why) <= SAID_FAILED:
            return why
        tail = SAID_FAILED * 2 // 5
        return f"{why[:SAID_FAILED - tail - 3].rstrip()} … {why[-tail:].lstrip()}"

    return [f"{l} failed ({short(why)})" for l, why in failed.items()]


def failed_text(s: Summary) -> str | None:
    """The cases that failed, but those a pair left out says (not_compared names its own cases' failures): a
    workload's case on a library its fn does not port to, in none of the run's pairs (jax beside the default pair
    numpy and torch), read as if it had never been asked for."""
    rest = {l: why for l, why in s.failed.items() if l not in s.not_compared_cases}
    return "; ".join(failed_sentences(rest)) if rest else None


def not_compared(run: Run, missing: list[tuple[str, str]]) -> str:
    """The pairs (base, head) not compared (or nothing at all), and why: what of their cases failed or had no
    timings, or that the run did not finish. Only the pairs' own cases: 'torch vs numpy not compared: torch failed
    (...); jax failed (...)' read as if jax's failure were a reason torch and numpy were not compared (failed_text
    says the others)."""
    mine = {l for pair in missing for l in pair} if missing else set(run.results)
    failed = failed_sentences({l: why for l, why in failures(run).items() if l in mine})
    untimed = [l for l, r in run.results.items() if l in mine and not r.error and r.at_sample_shape is None]
    why = failed + [f"{l} has no timings" for l in untimed] + ([] if run.complete else ["the run did not finish"])
    what = (f"{', '.join(f'{head} vs {base}' for base, head in missing)} not compared" if missing else
            "nothing compared" + ("" if run.results else " (the run has no cases)"))
    return f"{what}" + (f": {'; '.join(why)}" if why else "")


def nothing_compared(run: Run, missing: list[tuple[str, str]], pct: float) -> str:
    """Why --fail-above has nothing (or not everything) to decide on: the pairs not compared, and what failed."""
    return f"{not_compared(run, missing)}; inconclusive: no verdict on --fail-above {pct:g}%"


def unlike_sentence(result: DiffResult) -> str | None:
    """Why a diff of unlike work gets no verdict, or None."""
    if not result.unlike:
        return None
    return (f"no verdict: A and B measured different work ({'; '.join(map(str, result.unlike))}), so the ratio is "
            "of the work, not of the launch path; compare runs of the same work, or --allow-unlike to decide anyway")


def of_diff(result: DiffResult, fail_above: float | None = None, allow_unlike: bool = False) -> Summary:
    base, head = result.cases or ("A", "B")
    label = f"{head} vs {base}" if result.cases else f"{result.label}: B vs A"
    out = Summary("diff", result.base_run, result.head_run, complete=not result.incomplete,
                  incomplete=list(result.incomplete), differences=list(result.differences))
    if fail_above is not None and not allow_unlike and result.unlike:
        out.no_verdict, fail_above = unlike_sentence(result), None
    if result.change is not None:
        out.pairs.append(of_change(label, base, head, head if result.cases else "B", result.change, result.figures,
                                   fail_above, result.not_sampled, result.counts, result.lines))
        out.pairs[-1].shape = result.shape
    return out


@dataclass
class HeadlineRow:
    """A sweep's pair at one size, or an atlas's library against its op's fastest: the ratio with its interval."""

    label: str  # "torch vs numpy"
    base: str
    head: str
    at: str  # the size ("64", "1024x1024") or the op ("add")
    shape: list[int] | None
    figures: stats.PairFigures | None  # None: not measured there (a case failed)
    measure: str  # what the ratio is of, in words
    note: str | None = None  # why there is no ratio


def of_sweep(a: SweepAnalysis) -> Summary:
    """A sweep: per compared pair and size, the wall-time ratio (what a program feels; the sweep's headline)."""
    out = Summary("sweep", str(a.run_dir), str(a.run_dir), complete=a.run.complete)
    for pair in a.pairs:
        for p in pair.points:
            measured = p.wall is not None and p.wall.ratio is not None
            out.rows.append(HeadlineRow(f"{pair.head} vs {pair.base}", pair.base, pair.head, a.size_name(p.shape),
                                        list(p.shape), p.wall, "wall time per call" + (
                                            ", paired in the same processes" if pair.paired else ", not paired"),
                                        (INCONCLUSIVE_NOTE if p in pair.inconclusive else None) if measured else
                                        unmeasured(a, pair.base, pair.head, p.shape)))
    return out


# What the sweep's tables and sentences say of a size whose interval is too wide to read (the pair's inconclusive
# sizes, sweep.verdicts), where they give no ratio: the summary gave it as a finding beside them
INCONCLUSIVE_NOTE = (f"inconclusive: the processes disagree (its interval reaches further than "
                     f"±{sweep.INCONCLUSIVE:.0%} from the ratio)")


def unmeasured(a: SweepAnalysis, base: str, head: str, shape: list[int]) -> str:
    """Why a sweep's pair has no ratio at a size: the case that failed there, in its error's first line, as the
    sweep's own tables say it (a failed size read "not measured", as one never run does)."""
    for label in (base, head):
        p = a.at(label, shape)
        if p is not None and p.error:
            return f"{label} failed: {(p.error.strip().splitlines() or [''])[0]}"
    return "not measured"


def of_atlas(a: AtlasAnalysis) -> Summary:
    """An atlas: per op, each library's host time against the op's fastest library's (the atlas's headline)."""
    out = Summary("atlas", str(a.run_dir), str(a.run_dir), complete=a.run.complete)
    for r in a.rows:
        for label, c in r.cells.items():
            if label == r.fastest:
                continue
            f = c.ratio
            note = r.error or c.error or (None if f is not None and f.ratio is not None else "not measured")
            out.rows.append(HeadlineRow(f"{label} vs {r.fastest or 'the fastest'}", r.fastest or "", label, r.op,
                                        r.shape, f, "host time per call against the op's fastest library"
                                        + (", paired in the same processes" if f is not None and f.paired else ""),
                                        note))
        if not r.cells and r.error:
            out.rows.append(HeadlineRow(r.op, "", "", r.op, r.shape, None, "", r.error))
    return out


def not_judged(run_dir, kind: str) -> FlametoolError:
    """--fail-above on a sweep's or an atlas's run: it judges a compare run's pairs or a diff."""
    return FlametoolError(f"{run_dir}: {a_kind(kind)} run: --fail-above judges a compare run's pairs or a diff; "
                          f"{a_kind(kind)}'s ratios are per {'op' if kind == 'atlas' else 'size'}")


def of(result, fail_above: float | None = None, allow_unlike: bool = False) -> Summary:
    if isinstance(result, DiffResult):
        return of_diff(result, fail_above, allow_unlike)
    if isinstance(result, Analysis):
        return of_run(result, fail_above)
    if fail_above is not None:
        raise not_judged(result.run_dir, result.run.kind)
    if isinstance(result, SweepAnalysis):
        return of_sweep(result)
    if isinstance(result, AtlasAnalysis):
        return of_atlas(result)
    raise FlametoolError(f"{getattr(result, 'run_dir', 'the run')}: a {result.run.kind} run: summary covers compare, "
                         "sweep and atlas runs")
