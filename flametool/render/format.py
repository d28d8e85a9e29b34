"""How figures are written, in the terminal and in the report alike: one place, so the two never disagree."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from fractions import Fraction
from typing import overload

from ..analyse import countdiff, cxxnames
from ..analyse.attribution import CaseCosts
from ..run import sameness
from ..run.anchoring import Anchored
from ..run.stats import MAX_ADVISED_PROCESSES, WIDE, Interval, PairFigures, processes_for
from ..analyse.operands import UnlikeOperands
from ..run.counts import ON_CPU, Column, Counts, columns, count_words
from ..run.record import Environment, TimingStop
from ..analyse.sweep import SAME_WITHIN, PairPoint, SweepAnalysis, SweepPair, size_at, size_name

DASH = "–"


def middle(name: str, width: int) -> str:
    """A name cut to `width` characters in its middle ('ufunc_gen…(_multiarray_umath.so)'): a frame's function and
    its library both stay in sight, and the name is never broken over two lines."""
    if len(name) <= width or width < 5:
        return name
    function, sep, where = name.rpartition(" (")
    if sep and where.endswith(")") and function:  # the library goes first: 'pthread_mutex_lock (libc.so.6)'
        name = function
        if len(name) <= width:
            return name
    keep = width - 1
    return name[:(keep + 1) // 2] + "…" + name[len(name) - keep // 2:]


HEADER_WIDTH = 20  # a case's name heads a table's column over lines of this many characters (folded)
LABEL_WIDTH = 30  # a case's name in a table's first column, over lines of at most this many characters (folded)
BREAKS = "_.-@/ "  # where a long name is broken over lines (folded): after one of these, where one is near
PATH_BREAKS = "/ "  # where a file:line is: after a folder ('array_api_compat/torch/' over '_aliases.py:376')


def folded(name: str, width: int, breaks: str = BREAKS, anywhere: bool = False) -> str:
    """A long name (a case's label, 'einsum_numpy_contraction_of_two_operands') over lines of at most `width`
    characters, each broken after a '_', '.', '-', '@', '/' or space (`breaks`) in its second half where there is
    one (`anywhere`: in the line at all, as a path is broken after its last folder that fits: broken at its width,
    'numpy/_core/fromnumeric.py:2417' read 'numpy/_core/fromnumeric.py:241' over '7'): a narrow column (a table's
    header) that still shows the whole name, where a cut name could be two cases'."""
    lines = []
    while len(name) > width > 1:
        cut = max(name.rfind(c, 0, width) for c in breaks) + 1
        cut = cut if cut > (0 if anywhere else width // 2) else width
        lines.append(name[:cut].rstrip(" "))  # a line broken at a space does not end in it
        name = name[cut:]
    return "\n".join(lines + [name])


def as_shown(value: float) -> float:
    """A time per call rounded as us() shows it (two decimals, whole microseconds from 100 us, tenths of a
    millisecond from 10 ms): the figure a difference beside it is taken from."""
    if value >= 10_000:
        return round(value / 1000, 1) * 1000
    return float(round(value)) if value >= 100 else round(value, 2)


def many(n: int, noun: str) -> str:
    """'1 sample', '2 samples': a count with its noun (a plural in -s)."""
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def us(value: float | None, unit: str = " us") -> str:
    """A time per call: '18.65 us', '142 us', '57.8 ms'."""
    if not isinstance(value, (int, float)):
        return DASH
    if value >= 10_000:
        return f"{value / 1000:,.1f} ms"
    if value >= 100:
        return f"{value:,.0f}{unit}"
    return f"{value:,.2f}{unit}"


def num(value: float) -> str:
    return f"{value:,.2f}"


def us_bare(value: float) -> str:
    """A time per call's figure written as us() writes it, without its ' us': an interval beside it, so that
    '274 us' reads '(272 to 276)', not '(272.37 to 275.50)' (a figure of 10 ms or more keeps its ' ms')."""
    return us(value, "")


def signed(value: float) -> str:
    """'+1.25', '-0.75'; a value that rounds to zero is '+0.00' whichever its sign ('-0.02 to -0.00' read as if
    the interval stopped short of zero)."""
    text = f"{value:+,.2f}"
    return "+0.00" if text == "-0.00" else text


def shown_delta(base: float, head: float) -> float:
    """head - base of the two figures as they are shown (num: two decimals), so that a difference column is
    always the difference of the columns beside it."""
    return round(head, 2) - round(base, 2)


@overload
def difference(diff_us: float, base_us: float | None) -> float: ...
@overload
def difference(diff_us: None, base_us: float | None) -> None: ...
@overload
def difference(diff_us: float | None, base_us: float | None) -> float | None: ...
def difference(diff_us: float | None, base_us: float | None) -> float | None:
    """A pair's difference as every view shows it: head − base of the two pooled times as the tables show them
    (shown_delta), so the headline's figure, the sentence under it, the layer table's total and the floors'
    line are one rounded number (+8.06 stood beside +8.07: 17.72 − 9.65)."""
    if diff_us is None or base_us is None:
        return diff_us
    return shown_delta(base_us, base_us + diff_us)


def sampled_at(requested, sampled, reason: str | None) -> str:
    """Where a case that was not host-bound was sampled, and why. At the op's host-bound size itself there is
    no other shape to go to: runs recorded before this said "the requested shape 1024,1024,1024 is not
    host-bound ..., so launches are sampled at the host-bound shape 1024,1024,1024"."""
    if sampled and list(sampled) == list(requested or []) and reason != "given with --sample-shape":
        return (f"Sampled at the requested shape {shape(sampled)}, the op's host-bound size, where launches are "
                "sampled: even there the GPU hides this case's launches, so its samples show mostly waiting")
    return f"Sampled at {shape(sampled)}: {reason or 'no reason recorded'}"


def pm(value: float, se: float, sign: bool = False) -> str:
    return f"{signed(value) if sign else num(value)} ± {se:,.2f}"


def shape(value) -> str:
    return ",".join(map(str, value)) if isinstance(value, list) and value else DASH


def ratio_to_fastest(f, fastest: str | None) -> str:
    """An atlas cell's ratio to its op's fastest library, as every other ratio is written: '2.41× (2.30 to
    2.52)' (it read '2.41x (2.30-2.52)'), or 'fastest'."""
    if f is None:
        return "fastest" if fastest else DASH
    if f.ratio is None:
        return DASH
    iv = f.ratio_interval
    return f"{f.ratio:.2f}×" + (f" ({iv.low:.2f} to {iv.high:.2f})" if iv else "")


def differs_most(c) -> str:
    """An atlas cell's layer that differs most from the fastest library's, with by how much, and the layer that
    mostly takes it back where one does ('NumPy +26.09 us, ATen -23.40 us')."""
    if not c.differs_most:
        return DASH
    back = f", {c.offset_by[0]} {c.offset_by[1]:+.2f} us" if c.offset_by else ""
    return f"{c.differs_most} {c.differs_by:+.2f} us{back}"


def outputs_sentence(n) -> str:
    """What the fairness list says of jax's output buffers (operands.NewOutputs)."""
    def verb(names: list[str], plural: str, one: str) -> str:
        return f"{' and '.join([', '.join(names[:-1]), names[-1]] if len(names) > 1 else names)} " + (
            plural if len(names) > 1 else one)

    return (f"{verb(n.new, 'return', 'returns')} a new output buffer every call (JAX has no out=), where "
            f"{verb(n.into_out, 'write', 'writes')} {n.op}'s result into a preallocated out: an allocation a call "
            "is part of what the jax figures measure")


def rewritten_sentence(labels: list[str]) -> str:
    """What the fairness list says of cases whose step wrote the values it reads (operands.rewritten)."""
    names = " and ".join([", ".join(labels[:-1]), labels[-1]] if len(labels) > 1 else labels)
    return (f"{names}: step() wrote the values it reads (its operands hashed after the timed loops differed from "
            "set-up: an in-place update such as a += b), so each loop ran on other values than the last, and each "
            "case on other values than the others' (their loops differ in number); values that grow to inf or shrink "
            "to subnormals can change a library's speed. To time fixed values, write into a copy or an array of fn's "
            "own")


def op_shape(op: str, value) -> str:
    """A shape with the op it is a shape of (--op): 'matmul 1024,1024,1024', 'add 1048576'."""
    return f"{op} {shape(value)}"


# Under a frame table with rows matched by role (treediff.role_rows)
ROLE_KEY = ("; a row \"role: frames (base) ≈ frames (head)\" matches frames that do one job under names only one "
            "side has (roles.json: a GEMM kernel, the allocator, a lock, a launch), so a renamed job is not read as a "
            "difference")


def run_device(run) -> str | None:
    """The device a run asked for, or (a run that did not record it) the first case's."""
    return run.config.device or next((r.device for r in run.results.values() if getattr(r, "device", None)), None)


def _unlike_parts(u: UnlikeOperands, device: str | None, op: str,
                  pairs: list[tuple[str, str]] | None = None) -> tuple[str, str] | None:
    """What a warning of unlike operands says, and why it matters; None where no compared pair (`pairs`: the
    (base, head) of each; None: every two cases) read different values. The generator's details (SFC64, its
    streams) stay in run.json: a reader is told which pairs differ, not how each operand was drawn."""
    labels = list(u.cases)
    compared = pairs if pairs is not None else [(a, b) for i, a in enumerate(labels) for b in labels[i + 1:]]
    differ = [(b, h) for b, h in compared if b in u.cases and h in u.cases and u.cases[b] != u.cases[h]]
    if not differ:
        return None
    verb = "multiply" if op == "matmul" else "read"
    what = (f"at {shape(u.shape)} {u.dtype}, " + "; ".join(f"{h} and {b}" for b, h in differ)
            + f" {verb} different values (how each case made its operands: run.json, each result's operands; a case "
              "of your own takes the built-in cases' values from flametool.workload.values.uniform: "
              "docs/writing-cases.md#operand-values-and-fingerprints)")
    if device != "cpu" and op == "matmul":
        return what, ("A GEMM's GPU time depends on the values (power-limited clocks), so their GPU times differ by "
                      "the data too")
    return what, ("Their host times compare like with like unless the work depends on the values (special values "
                  "such as subnormals run slower)")


def unlike_sentence(u: UnlikeOperands, device: str | None = "cuda", op: str = "matmul",
                    pairs: list[tuple[str, str]] | None = None) -> str:
    """What a report says of cases that read different values at one shape and dtype, in words that fit the
    run: a GEMM's GPU time depends on the values (power-limited clocks); elsewhere, and on the CPU, that is
    not said (a CPU run's elementwise case was told of a GEMM's GPU clocks, once per operand shape)."""
    parts = _unlike_parts(u, device, op, pairs)
    return f"{parts[0]}. {parts[1]}" if parts else ""


def unlike_work(run) -> list[tuple[str, str]]:
    """("not like for like", the sentence) for each of dtype, shape, device and sampled shape on which the run's
    cases (those that did not fail) differ, as the report and the summary say it."""
    ok = {l: r for l, r in run.results.items() if not r.error}
    out = []
    for key, what in (("dtype", "dtypes"), ("shape", "shapes"), ("device", "devices"), ("sample_shape", "sampled shapes")):
        values = {l: getattr(r, key) for l, r in ok.items()}
        if len({json.dumps(v) for v in values.values()}) > 1:
            listed = ", ".join(f"{l} {shape(v) if isinstance(v, list) else v}" for l, v in values.items())
            out.append(("not like for like", f"the cases ran with different {what}: {listed}"))
    return out


def share_se(what: str) -> str:
    """What the ± of a sampled figure (a line's, a frame's, a layer's) is, in every key that shows one: the figures
    are the share of the samples times the case's time per call, and the ± the share's sampling error alone, so a
    `what` in every sample of the step (a workload's one fn line, the step's own frame) reads ± 0.00."""
    return SHARE_SE.format(whose=f"the {what}'s", one=f"a {what}")


SHARE_SE = ("± one standard error of {whose} share of the samples, not of the case's time per call the share scales "
            "(that time's own uncertainty is not in it: {one} in every sample reads ± 0.00)")


def cautions(a, run) -> list[tuple[str, str]]:
    """What a reader of a compare run's figures must know before trusting them, as (tag, sentence): cases
    that ran unlike work, read other operand values or made new outputs (unlike_work, fairness)."""
    return unlike_work(run) + fairness(a, run)


def fairness(a, run) -> list[tuple[str, str]]:
    """(what differs, the sentence) of a compare's or a sweep's analysis `a`, as every view says it: the operand
    values each compared pair read ("operands differ"), jax's new output buffers ("outputs differ"), an anchor
    whose library differs between the environments ("anchor differs"), and a caller off the CPU much of its host
    time ("host time is not all work")."""
    out = [("operands differ", line) for line in unlike_lines(a.unlike, run_device(run), run.config.operation,
                                                               [(p.base, p.head) for p in a.pairs])]
    out += [("outputs differ", outputs_sentence(a.new_outputs))] if a.new_outputs else []
    out += [("operands written", rewritten_sentence(a.rewritten))] if a.rewritten else []
    # an --anchor whose library the environments' probes showed to differ: said once before the run, and here in
    # every view after it (the verdict ends with it too: summary.of_run)
    out += [("anchor differs", found)] if (found := sameness.anchor_caution(run)) else []
    return out + [("host time is not all work", off_cpu_sentence(o)) for o in a.off_cpu]


def off_cpu_sentence(o) -> str:
    """What the fairness list says of a case whose caller was off the CPU much of its host time (compare.OffCpu)."""
    return (f"{o.label}'s calling thread was on the CPU for {o.own_share:.0%} of its host time per call (the median "
            f"loop); the other {o.off_share:.0%} it waited, for the threads it hands its work to (JAX's CPU backend "
            "does), a lock or the GPU, or was preempted by other work on the machine: its host time is more than "
            "its own work (its threads' CPU time is under 'threads other than the caller')")


def unlike_lines(unlike: list[UnlikeOperands], device: str | None, op: str,
                 pairs: list[tuple[str, str]] | None = None) -> list[str]:
    """The run's operand warnings, one per shape and dtype where a compared pair read different values; why it
    matters is said once, on the first."""
    lines: list[str] = []
    for u in unlike:
        parts = _unlike_parts(u, device, op, pairs)
        if parts:
            lines.append(f"{parts[0]}. {parts[1]}" if not lines else parts[0])
    return lines


def interval(iv: Interval | None, fmt=num) -> str:
    return f"{fmt(iv.low)} to {fmt(iv.high)}" if iv else "no interval"


def ratio(value: float | None) -> str:
    return f"{value:.3f}×" if isinstance(value, (int, float)) else DASH


def pair_sentence(f: PairFigures, where: str = "") -> str:
    """'torch / cupy = 0.672× (95%: 0.661–0.683); torch − cupy = −5.10 us per call (−5.31 – −4.89), paired
    over 5 processes'."""
    if f.ratio is None:
        return f"{f.head} against {f.base}{where}: nothing to compare"
    assert f.diff_us is not None  # a ratio comes with its difference
    text = (f"{f.head} / {f.base} = {ratio(f.ratio)}"
            + (f" (95%: {interval(f.ratio_interval, lambda v: f'{v:.3f}')})" if f.ratio_interval else " (no interval)")
            + f"; {f.head} − {f.base} = {signed(difference(f.diff_us, f.base_us))} us per call"
            + (f" (95%: {interval(f.diff_interval, signed)})" if f.diff_interval else ""))
    how = (f"paired over {f.units} {f.unit_name}" if f.paired else "not paired: each case in processes of its own")
    return f"{text}{where}, {how}"


def host_moved(change: float, where: str, anchor: str | None = None) -> str:
    """The anchor's own change in words: 'the host ran 38% slower in B'. `anchor`: the anchor's name, where its
    library is known not to be the same on both sides (an anchor that differs between the environments,
    sameness.anchor_caution; one whose library changed version between the runs, DiffResult.anchor_moved): its own
    change is then not the host's speed alone, and the sentence does not give it to the host."""
    moved = ("at the same speed" if not math.isfinite(change) or abs(change - 1) < 0.0005
             else f"{abs(change - 1):.1%} {'slower' if change > 1 else 'faster'}")
    if anchor is not None:
        return (f"{anchor} ran {moved} in {where}, but its library is not the same on both sides, so this may be "
                "that library's own change, not the host's speed")
    return f"the host ran {moved} in {where}"


def anchored_lines(a: Anchored, base: str, head: str, head_where: str, differs: bool = False) -> list[str]:
    """A case on two sides relative to the anchor timed beside it (the figure that holds), then the absolute
    figures, which carry the host's speed, and the anchor's own change: how far the host's speed moved (`differs`:
    the anchor's library is known not to be the same on both sides, so its change may be that library's: host_moved);
    then, when the ratio is speed-adjusted (Anchored.speed), what the adjustment did."""
    iv = lambda i, f: f" (95%: {interval(i, f)})" if i else " (no interval: fewer than two processes a side)"  # noqa: E731
    lead = (f"{head} / {base} relative to {a.anchor} = {ratio(a.ratio)}{iv(a.ratio_interval, lambda v: f'{v:.3f}')}; "
            f"{head} − {base} = {signed(a.diff_us)} us per call{iv(a.diff_interval, signed) if a.diff_interval else ''} "
            f"at the common speed of both sides' processes ({base} {us(a.at_us)} there), anchored on {a.anchor} over "
            f"{a.base_units} + {a.head_units} {a.unit_name}")
    b = a.absolute
    assert b.base_us is not None  # anchoring.anchored gives apart() the base's time
    absolute = (f"not anchored: {base} {us(b.base_us)} → {head} {us(b.base_us * b.ratio) if b.ratio else DASH} "
                f"per call, {signed(difference(b.diff_us, b.base_us)) if b.diff_us is not None else DASH} us"
                + (f" (95%: {interval(b.diff_interval, signed)})" if b.diff_interval else "")
                + (f", {ratio(b.ratio)}" if b.ratio else "")
                + f"; {a.anchor}'s own change {ratio(a.anchor_change)}: {host_moved(a.anchor_change, head_where, a.anchor if differs else None)}")
    return [lead, absolute] + ([a.speed.sentence(base, head)] if a.speed is not None else [])


def change_lines(change, label: str, cases: tuple[str, str] | None) -> list[str]:
    """What `flametool diff` leads with (change: diff.Change): the change relative to the anchor and beside it
    the absolute change and the anchor's own, or why there is no anchor and the absolute change."""
    base, head = cases or ("A", "B")
    if change is None or change.ratio is None:
        return [f"{label}: nothing to compare"]
    if change.anchored is not None:
        lead, *rest = anchored_lines(change.anchored, base, head, f"{head}'s processes" if cases else "B",  # as markdown says it
                                     change.anchor_caution is not None)
        return [(f"{label}: " if not cases else "") + lead, *rest]
    f = change.absolute
    text = (f"{head} / {base} = {ratio(f.ratio)}"
            + (f" (95%: {interval(f.ratio_interval, lambda v: f'{v:.3f}')})" if f.ratio_interval else " (no interval)")
            + f"; {head} − {base} = {signed(difference(f.diff_us, f.base_us))} us per call"
            + (f" (95%: {interval(f.diff_interval, signed)})" if f.diff_interval else "") + f", {change.how}")
    return [(f"{label}: " if not cases else "") + text] + ([change.no_anchor] if change.no_anchor else [])


# Below this many processes the spread between them is too uncertain to say that more would not settle it
FEW_PROCESSES = 5


def wide_note(f: PairFigures, isolated: bool | None = None) -> str | None:
    """One line when the ratio's interval is wide, with what would help: the processes (more than ran) that
    would bring it within ±WIDE at the spread seen, or that more processes would not settle it. `isolated`:
    whether the run was made with --isolate (None: not known, and then an unpaired pair is taken to be so); a
    pair unpaired for another reason (two environments' cases) is not advised to leave out an option not given."""
    if f.ratio is None or not f.wide:
        return None
    ran = f.units if f.unit_name == "processes" else 1
    without = "" if f.paired or isolated is False else ", and without --isolate"
    if f.ratio_interval is None:
        return (f"{f.head} / {f.base}: no interval (too few processes or rounds); run with --processes "
                f"{max(ran + 1, 5)} for one{without}")
    assert f.reach is not None  # a ratio with its interval
    if round(f.reach * 100, 1) <= round(WIDE * 100, 1):
        return None  # wide by a hair, and shown as ±5% it is not: no advice that it would take more to reach ±5%
    reach = f"{f.reach:.0%}" if f"{f.reach:.0%}" != f"{WIDE:.0%}" else f"{f.reach:.1%}"
    where = f"the interval reaches ±{reach} from the ratio over {f.units} {f.unit_name}"
    if ran < 2:
        return f"{f.head} / {f.base}: {where}; run with --processes 5 to pool processes{without}"
    need = processes_for(f)
    if need is None and ran < FEW_PROCESSES:  # a spread read off so few processes is itself unsettled
        return (f"{f.head} / {f.base}: {where}: too few to tell how far the processes disagree; run with "
                f"--processes {FEW_PROCESSES}{without}")
    if need is None:
        return (f"{f.head} / {f.base}: {where}: the processes disagree more than more processes would settle "
                f"(±{WIDE:.0%} would take over {MAX_ADVISED_PROCESSES}); a quieter machine would{without}")
    return (f"{f.head} / {f.base}: {where}: the processes disagree; --processes {need} would bring it to about "
            f"±{WIDE:.0%}{without}")


def stop_note(stop: TimingStop, a_side: bool, reach: float) -> str:
    """The line under a pair whose interval (reaching `reach` from its ratio) was wider than it settles at when
    compare stopped adding processes (run.timing_stop, where it applies): how wide, and why no more ran."""
    most = f"{stop.most} a side" if a_side else str(stop.most)
    why = {"spread": f"its processes disagreed so much that up to {most} would not have settled it at that spread "
                     "(a quieter stretch of the host may; --settle PCT asks for less)",
           "budget": "the time allowed for more processes was spent (--budget SECONDS allows more)",
           "most": f"the most processes compare runs, {most}, were run"}[stop.reason]
    return (f"{stop.head} / {stop.base}: compare stopped adding processes with its interval at ±{reach:.1%}, wider "
            f"than the ±{stop.limit * 100:.3g}% it settles at: {why}")


@dataclass
class PairText:
    """What a compared pair says first, sorted by what it is: `answer`, its leading figure (and the requested
    shape's, where that was led at the sample shape); `method`, how an anchored figure was reached (the figure not
    anchored and the anchor's own change, what the speed adjustment did); `cautions`, how far to trust the answer
    (a wide interval, compare stopping before it settled). The report leads with the answers and puts the method
    below, quieter; the terminal prints them as pair_lines orders them."""

    answer: list[str]
    method: list[str] = field(default_factory=list)
    cautions: list[str] = field(default_factory=list)


def pair_text(pair, run) -> PairText:
    """A compared pair (compare.PairAnalysis of `run`): its leading figure, the requested shape's when that is
    another, a line when the interval is wide, and one when compare stopped adding processes before it settled
    (stop_note)."""
    lead = pair.headline
    stop = run.timing_stop
    if getattr(pair, "anchored", None) is not None:
        where = f"{pair.head}'s processes"
        reach = pair.anchored.reach
        stopped = stop_note(stop, True, reach) if stop and stop.applies(pair.base, pair.head, reach) else None
        differs = sameness.anchor_caution(run) is not None  # its own change may be its library's, not the host's
        figure, *method = anchored_lines(pair.anchored, pair.base, pair.head, where, differs)
        return PairText([figure], method, [stopped] if stopped else [])
    if lead is None:
        return PairText([])
    stopped = (stop_note(stop, bool(run.environments), lead.reach)
               if stop and stop.applies(pair.base, pair.head, lead.reach) else None)
    at_sample = pair.sample is not None and lead is pair.sample
    lines = [pair_sentence(lead, f" at the sample shape {shape(run.results[pair.head].sample_shape)}" if at_sample else "")]
    if at_sample and pair.timing is not None and pair.timing.ratio is not None:
        lines.append(f"At the requested shape {shape(run.results[pair.head].shape)}: " + pair_sentence(pair.timing))
    note = wide_note(lead, bool(run.config.recorded.get("isolate")))
    return PairText(lines, [], [line for line in (note, stopped) if line])


def pair_lines(pair, run, processes: int) -> list[str]:
    """What a compared pair says first in the terminal (pair_text): the answer, how it was reached, then the
    cautions on it."""
    t = pair_text(pair, run)
    return t.answer + t.method + t.cautions


def speed_note(pairs: list) -> str | None:
    """What the figures of the compared pairs (compare.PairAnalysis) hold to, said once under them: ratios and
    shares of time travel between runs far better than microseconds, but not exactly (on the H200 the ratio read
    up to 3.4% apart in runs that drew the host's two speeds in different measure: docs/calibration.md);
    microseconds are this run's host speed, and their intervals cover this run's processes only."""
    leads = [p.headline for p in pairs if p.headline is not None and p.headline.ratio is not None]
    if not leads:
        return None
    # an anchored pair (--env) is over each environment's processes: '8 + 8 processes', not the 8 of one side
    units = sorted({f"{p.anchored.base_units} + {p.anchored.head_units} {p.anchored.unit_name}" if p.anchored is not None
                    else f"{p.headline.units} {p.headline.unit_name}"
                    for p in pairs if p.headline is not None and p.headline.ratio is not None})
    return ("The ratio is the figure to compare between runs (flametool diff RUN_A RUN_B --case CASE); microseconds "
            f"are this run's host speed, their 95% intervals over this run's {' / '.join(units)} (docs/glossary.md).")


def extra_host(a: SweepAnalysis, sp: SweepPair, pp: PairPoint) -> float | None:
    """A sweep pair's extra host time at a size (the slower case's beyond the faster's) as the difference of the
    two host figures the tables show beside it (shown_delta)."""
    if pp.slower is None or pp.extra_host_us is None:
        return pp.extra_host_us
    slower, faster = a.at(pp.slower, pp.shape), a.at(sp.head if pp.slower == sp.base else sp.base, pp.shape)
    if slower is None or faster is None or slower.cpu_us is None or faster.cpu_us is None:
        return pp.extra_host_us
    return as_shown(slower.cpu_us) - as_shown(faster.cpu_us)  # as us() shows each: '125 us' beside '79.89 us'


def sweep_pair_lines(sp: SweepPair, processes: int, op: str) -> list[str]:
    """What a sweep's pair says in words, in the terminal and the report alike: where the wall-time ratio is
    furthest from even, where the two cases' wall times cross, and the size whose interval is widest when it
    is wide. `op`: the run's, which names the sizes (record.size_name)."""
    measured = [p for p in sp.points if p.wall is not None and p.wall.ratio is not None]
    if not measured:
        return [f"{sp.head} against {sp.base}: nothing to compare"]
    gone = {id(p) for p in sp.inconclusive}
    conclusive = [p for p in measured if id(p) not in gone]
    lines = []
    if conclusive:
        def distance(p: PairPoint) -> float:
            assert p.wall is not None and p.wall.ratio is not None  # measured
            return abs(math.log(p.wall.ratio))
        far = max(conclusive, key=distance)
        assert far.wall is not None and far.wall.ratio is not None  # measured
        lines.append(f"{sp.head} / {sp.base} wall time per call: furthest from even at {size_name(far.shape, op)}, "
                     f"{ratio(far.wall.ratio)}" + (f" (95%: {interval(far.wall.ratio_interval, lambda v: f'{v:.3f}')})"
                                                   if far.wall.ratio_interval else "")
                     + (f"; {far.share:.0%} of {far.slower}'s wall time there is host time {far.slower} spends beyond "
                        "the other" if far.share else ""))
    for c in sp.even:
        below, above = (sp.head, sp.base) if c.rising else (sp.base, sp.head)
        lines.append(f"{sp.head} and {sp.base} take the same wall time at about {size_at(c.size, c.low, c.high, op)} (between "
                     f"{size_name(c.low, op)} and {size_name(c.high, op)}, whose intervals are beyond "
                     f"±{SAME_WITHIN:.0%} of 1 on either side): "
                     f"{below} is faster below it, {above} above it")
    # 'at every size' only where every size has a conclusive ratio (an inconclusive or unmeasured one is not one)
    every = ("at every size" if len(conclusive) == len(sp.points) else
             f"at every size with a conclusive ratio ({len(conclusive)} of {len(sp.points)})")
    for st in sp.stretches:
        where = (every if st.first and st.last else f"at {size_name(st.low, op)}" if st.low == st.high
                 else f"from {size_name(st.low, op)} up" if st.last else f"up to {size_name(st.high, op)}" if st.first
                 else f"from {size_name(st.low, op)} to {size_name(st.high, op)}")
        if st.side == 0:
            lines.append(f"{sp.head} and {sp.base} take the same wall time within ±{st.reach:.1%} {where} (95% "
                         f"intervals {st.ratio_low:.3f} to {st.ratio_high:.3f}, none wholly beyond ±{SAME_WITHIN:.0%} "
                         "of 1: what a paired ratio moves between runs)")
        else:
            faster = sp.head if st.side < 0 else sp.base
            lines.append(f"{faster} is faster {where}: {sp.head} / {sp.base} {st.ratio_low:.3f} to "
                         f"{st.ratio_high:.3f} (95% intervals)")
    for p in sp.inconclusive:
        assert p.wall is not None  # inconclusive: measured, its interval too wide
        lines.append(f"at {size_name(p.shape, op)} the wall-time ratio is inconclusive: its 95% interval runs from "
                     f"{interval(p.wall.ratio_interval, lambda v: f'{v:.3g}')} (the processes disagree)")
    def reach(p: PairPoint) -> float:
        assert p.wall is not None  # measured
        return p.wall.reach if p.wall.reach is not None else math.inf
    widest = max(conclusive or measured, key=reach)
    assert widest.wall is not None  # measured
    note = wide_note(widest.wall)
    if note:
        lines.append(f"at {size_name(widest.shape, op)}, wall time: {note}")
    return lines


def environment_line(e: Environment) -> str:
    """What an environment of `compare --env` is: 'main: Python 3.11.9 (/venv/bin/python), numpy 2.1.0'."""
    libs = ", ".join(f"{lib} {v or '(no version)'}" + (f" (git {e.describe[lib]})" if lib in e.describe else "")
                     for lib, v in e.versions.items())
    # the PYTHON as given first: two wrapper scripts of one interpreter (a build each) read as one environment
    where = e.python if not e.executable or e.executable == e.python else f"{e.python}, running {e.executable}"
    return f"environment {e.name}: Python {e.python_version or '?'} ({where})" + (f", {libs}" if libs else "")


def closure_sentence(x: CaseCosts) -> str:
    """A case attribution's closure check in words."""
    c = x.closure
    repaired = x.repaired_samples
    return (f"layers sum to {c.layers_sum_us_per_call:,.2f} of {c.measured_us_per_call:,.2f} us per call "
            f"measured ({c.ratio:.1%}: every sample counted in a layer once), from {many(x.samples, 'sample')}"
            + (f" ({repaired} repaired: an inlined header chain py-spy put between a function and itself)"
               if repaired else ""))


# C0 and C1 control characters and DEL (ESC, CSI, BEL, BS, CR, ...), Unicode line and paragraph
# separators, and the bidirectional controls that reorder what follows them on screen
_BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
_CONTROLS = [chr(i) for i in range(0x20)] + ["\x7f"] + [chr(i) for i in range(0x80, 0xA0)] + ["\u2028", "\u2029", *_BIDI]
_VISIBLE = str.maketrans({c: f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}" for c in _CONTROLS})


def visible(value: object) -> str:
    """The text with every control character written as an escape (\\x1b, \\u202e): a name from another
    machine's run (ESC[2J) prints as text and clears nothing."""
    return str(value).translate(_VISIBLE)


def code_span(text: str) -> str:
    """`text` as a Markdown code span that keeps all of it, backticks included (CommonMark: a fence of one backtick
    more than the longest run of them inside, and a space inside the fence where the text starts or ends with one);
    plain text reads it as quoted. Dropping its backticks had shown a frame or a line other than the one sampled.
    Its control characters are written as escapes (visible): nothing in a span is escaped otherwise."""
    text = visible(text)
    fence = "`" * (max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def differences_text(differences) -> str | None:
    """What the two runs of a diff did not do alike (diff.Difference), in one line; None when nothing."""
    if not differences:
        return None
    unlike = [str(d) for d in differences if d.unlike]
    other = [str(d) for d in differences if not d.unlike]
    parts = ([f"different work: {'; '.join(unlike)}"] if unlike else []) + (["; ".join(other)] if other else [])
    return "A and B differ: " + "; ".join(parts)


def incomplete_text(incomplete: list[str]) -> str | None:
    """A diff: which of its runs did not finish ("A", "B", "the run"), in one line; None when they all did."""
    if not incomplete:
        return None
    return (f"{' and '.join(incomplete)} did not finish (complete: false in its run.json): the figures are of the "
            "cases that finished")


def named_counts(tallies, short: bool = False, width: int = 0) -> str:
    """'6 cudaGetDevice, 2 cuKernelGetAttribute, 1 cuLaunchKernelEx': the most frequent first (`short`: each
    name demangled and shortened by template depth; `width`: and cut in its middle to that many characters)."""
    def name(n: str) -> str:
        return middle(cxxnames.shortened(n), width) if short and width else cxxnames.shortened(n) if short \
            else cxxnames.demangled(n)
    return ", ".join(f"{count_words(t.count)} {name(t.name)}" for t in sorted(tallies, key=lambda t: (-t.count, t.name)))


GPU_COUNTS = ("counted on the CPU: Python calls per step; a run on a GPU also counts each step's CUDA API calls, "
              "kernels, copies, memsets and device allocations")


def counted_notes(counted: dict[str, Counts], on_cpu: bool) -> list[str]:
    """The counts tables' notes: each line of the cases' `missing` once, named by the cases it is of where not
    every case's ('third: Python calls per line of step() sum to ...'); on the CPU first GPU_COUNTS, which says
    what the CPU cannot count in place of each case's ON_CPU line (the other lines stay: a counted loop that
    failed, a kind not listed per line)."""
    of: dict[str, list[str]] = {}
    for label, c in counted.items():
        for m in c.missing:
            if not (on_cpu and m == ON_CPU):
                of.setdefault(m, []).append(label)
    return ([GPU_COUNTS] if on_cpu else []) + [m if len(labels) == len(counted) else f"{', '.join(labels)}: {m}"
                                               for m, labels in of.items()]


def counted_columns(cases) -> tuple[list[Column], list[str]]:
    """The counted table's columns that some case has (a CPU run has no CUDA API, kernel or copy columns, all
    'not counted'), and the tracers that counted the CUDA parts ('cupti-python 13.4.0')."""
    cases = list(cases)
    kept = [col for col in columns()
            if any(all(c.counted(k) for k in col.kinds) or any(t.kind in col.kinds for t in c.tallies) for c in cases)]
    return kept, sorted({c.tracer for c in cases if c.tracer})


def busy_threads(threads: dict) -> dict:
    """The cases whose threads other than the caller did work during the loop (compare.OtherThreads): a figure
    that reads 0.00 us with no samples of them is no work, and its row would be a row of dashes."""
    return {l: t for l, t in threads.items() if t.costs is not None or round(t.us_per_call, 2) > 0}


def threads_unsampled(result, threads) -> str:
    """Why a case's other threads (compare.OtherThreads) have no layers: the run did not sample; py-spy would
    have caught them many times had it sampled them, so they run no Python, and py-spy samples only threads that
    do (JAX's: XLA's worker pool); or they ran between py-spy's samples."""
    if not result.sampling:
        return "not sampled"
    if threads.native:
        return (f"none sampled, where about {threads.expected_samples:,.0f} would have been: py-spy samples only "
                "threads that run Python, and these run none (native threads, such as XLA's workers under JAX)")
    return "no samples of them (they ran between py-spy's samples)"


def count_cells(c: Counts, empty: str = "") -> list[str]:
    """A case's counted loop in words, the terminal's table and the report's alike: a cell per column of
    counts.columns() (its Python calls, CUDA API calls, kernels, and copies, memsets and device allocations;
    `empty` where a listed column has none)."""
    cells = [count_cell(c, col, empty) for col in columns()]
    if c.corrupted:  # kept in run.json, never compared: said where its figures would be (the memory column kept)
        return [f"corrupted: {c.corrupted}", *("-" for _ in cells[1:-1]), cells[-1]]
    return cells


def count_cell(c: Counts, col: Column, empty: str = "", short: bool = False, width: int = 0) -> str:
    """One cell of the counted table; `short`: kernel and C++ names shortened (cxxnames.shortened), as a
    terminal's table shows them, and with `width` cut in the middle to fit (the report's and the JSON's keep the
    full name)."""
    tallies = [t for t in c.tallies if t.kind in col.kinds]
    if col.cell == "total":  # the Python calls: their sum and how many functions made them
        n = len(tallies)
        return f"{count_words(sum((t.count for t in tallies), Fraction(0)))} in {n} function{'' if n == 1 else 's'}"
    if col.cell == "named":
        return named_counts(tallies, short, width) if all(c.counted(k) for k in col.kinds) else "not counted"
    listed = [countdiff.thing(t.kind, t.name, t.count) + (f" ({count_words(t.bytes)} B)" if t.bytes is not None
                                                           else "")
              for t in tallies if t.count and t.kind != "host-alloc"]
    listed += [f"host {'peak' if t.name.startswith('peak') else 'kept (net)'} {count_words(t.bytes)} B a step"
               for t in tallies if t.kind == "host-alloc" and t.bytes is not None and t.bytes
               and (t.name.startswith("peak") or abs(t.bytes) >= 1024)]
    return "; ".join(listed) or empty
