"""The report's headline (the compare page's first section): each case's timing row, the sentence that says the
answer for the pair the page shows first, each pair's lines, and how far each case is above the floors."""

from __future__ import annotations

from dataclasses import dataclass, field

from . import format as fmt
from ..workload import builtins
from ..analyse import attribution
from ..analyse.compare import Analysis
from ..run.record import CaseResult, Run

us, num, shape_text = fmt.us, fmt.num, fmt.shape


@dataclass
class CaseRow:
    label: str
    library: str
    dtype: str
    shape: str
    device: str
    cpu: str
    cpu_spread: str
    gpu: str
    ratio: str
    bound: str
    error: str


@dataclass
class Answer:
    """One compared pair's answer, as the headline leads with it: its figure (ratio and difference with intervals),
    its verdict where the run was given --fail-above, and how far to trust it (format.PairText)."""

    lines: list[str]
    verdict: str = ""
    outcome: str = ""  # the verdict's: slower, passed, inconclusive (the page marks each its own way)
    cautions: list[str] = field(default_factory=list)


@dataclass
class Headline:
    cases: list[CaseRow]
    sentence: str
    base: str
    note: str
    floors: list[str] = field(default_factory=list)
    # each compared pair's answer, first and in bold: the page of a compare --env run gave its figure, the figure
    # not anchored and the speed adjustment as equal bold bullets, and the verdict below all of them
    pairs: list[Answer] = field(default_factory=list)
    how: list[str] = field(default_factory=list)  # how the answers were reached (anchored pairs), after them, quieter
    method: str = ""  # how those were computed, and which time the layer and frame figures use
    speed_note: str = ""  # which figures hold across runs, and what the intervals of microseconds cover


# How the figure an anchored pair (compare --env) leads with is made (anchoring.anchored), and the one beside it
ANCHORED_METHOD = ("anchored: each environment's processes time the case beside the anchor, loops interleaved; the "
                   "ratio is of the two sides' case/anchor ratios with a t 95% interval, speed-adjusted where each side "
                   "has two or more processes (the line 'speed adjustment' says what the adjustment did), and the "
                   "difference is the base's time at the common speed of both sides' processes times (ratio - 1); "
                   "not anchored, beside it: the pooled times alone, each side in processes of its own, so the host's "
                   "own speed is not cancelled")


def ok_results(run: Run) -> dict[str, CaseResult]:
    return {l: r for l, r in run.results.items() if not r.error}


def headline(a: Analysis) -> Headline:
    run = a.run
    ok = ok_results(run)
    base = next(iter(ok), "")
    base_cpu = t.cpu_us if base and (t := a.timings.get(base)) else None
    rows = []
    for label, r in run.results.items():
        t = a.timings.get(label)
        cpu = t.cpu_us if t else None
        rows.append(CaseRow(
            label=label, library=r.library or r.factory or "", dtype=r.dtype or "–",
            shape=fmt.op_shape(run.config.operation, r.shape), device=r.device_name or r.device or "–",
            cpu=us(cpu), cpu_spread=f"95%: {fmt.interval(t.interval, us)}" if t and t.interval else "",
            gpu=us(t.gpu_us) if t and t.gpu_us is not None else ("none (CPU)" if r.device == "cpu" else "–"),
            ratio=times(cpu / base_cpu) if isinstance(cpu, (int, float)) and base_cpu else "–",
            bound=("host-bound" if r.timing.host_bound else "not host-bound") if r.timing and r.timing.host_bound is not None else "–",
            error=r.error or "",
        ))
    pairs, how, methods = [], [], []
    given = verdicts(a)
    for p in a.pairs:
        text = fmt.pair_text(p, run)
        if text.answer:
            outcome, verdict = given.get((p.base, p.head), ("", ""))
            pairs.append(Answer(text.answer, verdict, outcome, text.cautions))
        how += text.method
        # an anchored pair leads with its anchored figure (fmt.pair_lines): its headline's method is that of the
        # not-anchored figure beside it ("isolated: ... not cancelled"), which said of the lead was wrong
        m = ANCHORED_METHOD if p.anchored is not None else p.headline.method if p.headline is not None else None
        if m is not None and m not in methods:
            methods.append(m)
    method = (" ".join(m[0].upper() + m[1:] + "." for m in methods)
              + " A case's own time: a bootstrap 95% interval over its processes."
              + " Layer and frame figures are sample shares times each case's paired time per call at the sampled "
                "shape (pooled over its timing processes at the median process's speed, as in the table); the sampled process's own unsampled time "
                "is shown beside it in the cProfile section as a check. The words (host-bound, floor, anchor, "
                "speed-adjusted, layers): docs/glossary.md in flametool's repository.")
    on_gpu = any(r.device != "cpu" for r in ok.values())
    return Headline(rows, sentence(a, ok), base,
                    "host (CPU) / call: the host's clock around the loop, per call, pooled over the case's timing "
                    "processes at the median process's speed (the figure its pairs' ratios and differences are taken "
                    "at), its 95% interval below. "
                    + ("GPU / call: device time per call from CUDA events around the same calls. " if on_gpu else
                       "GPU / call: none, the run is on the CPU. ")
                    + f"× first: host time against the first case's ({base}). bound: host-bound, "
                    + ("the GPU waited for the host's launches (what flametool measures), or not, the host waited "
                       "for the GPU." if on_gpu else "the loop's time is the host's own work."),
                    against_floors(a, ok), pairs, how, method, fmt.speed_note(a.pairs) or "")


def verdicts(a: Analysis) -> dict[tuple[str, str], tuple[str, str]]:
    """The --fail-above verdict of each pair (base, head) of a run made with it, as the run's exit code and summary
    --fail-above PCT give it: (its outcome, summary's words)."""
    pct = a.run.config.fail_above
    if pct is None:
        return {}
    from ..analyse import summary

    made = summary.of(a, pct)
    return {(p.base, p.head): (v.outcome, f"verdict: {v.outcome}: {v.sentence}")
            for p in made.pairs if (v := p.verdict) is not None}


def against_floors(a: Analysis, ok: dict[str, CaseResult]) -> list[str]:
    """How far each library case is above each floor measured in the same run, at the same shape and dtype."""
    cpu = {l: t.cpu_us for l in ok if (t := a.timings.get(l))}
    floors = {l: r for l, r in ok.items() if builtins.is_floor(l, r.factory) and l in cpu}
    lines = []
    for label, r in ok.items():
        if label in floors or label not in cpu:
            continue
        parts = [f"{fmt.shown_delta(cpu[fl], cpu[label]):+,.2f} us against {fl} ({us(cpu[fl])}: {builtins.FLOORS[fl]})"
                 for fl, f in floors.items() if (f.shape, f.dtype) == (r.shape, r.dtype)]
        if parts:
            lines.append(f"{label} ({us(cpu[label])} per call): " + "; ".join(parts) + ".")
    return lines


def times(ratio: float) -> str:
    """'× first': two decimals, or three figures below 0.1 (a CUDA graph's launch read 0.00× of cupy's)."""
    return f"{ratio:.2f}×" if ratio >= 0.1 or ratio == 0 else f"{ratio:.2g}×"


def sentence(a: Analysis, ok: dict[str, CaseResult]) -> str:
    # the pair the page shows first (its pair switch selects the first pair with a diff): the prose and the view
    # below it speak of one pair (the largest gap, cupy − cublas, was told above a view of torch − cupy)
    pair = next((p for p in a.pairs if p.diff), None)
    if pair is not None:
        case_diff = pair.diff
        assert case_diff is not None  # only the pairs with a diff
        base, head = case_diff.base, case_diff.head
        b, h = case_diff.base_us_per_call, case_diff.head_us_per_call
        # one sign convention everywhere: head − base of the pair BASE:HEAD, as the pair's line and the charts
        delta = fmt.shown_delta(b, h)
        shape = shape_text(ok[head].sample_shape if head in ok else None)
        text = (f"At the sampled shape ({shape}) {head} − {base} = {delta:+,.2f} us per call on the host ({head} "
                f"{num(h)} us against {base} {num(b)} us" + (f", {h / b:.2f}×" if b else "") + "; "
                # an anchored pair's diff is at the common speed of both sides' processes (speed_heading), not at
                # the pooled times the case table shows (numpy@b 12.65 us there, 9.61 us pooled)
                + ("both at the common speed of their processes" if pair.anchored is not None else "the pooled times")
                + ", as the pair's figure above).")
        layers = sorted(case_diff.layers, key=lambda r: -abs(r.delta_us_per_call))
        frames = [r for r in case_diff.frames if r.delta_us_per_call]
        parts = []
        if layers and layers[0].delta_us_per_call:
            l0 = layers[0]
            parts.append(f"largest layer difference: {l0.layer} "
                         f"({fmt.shown_delta(l0.base_us_per_call, l0.head_us_per_call):+,.2f} us)")
        if frames:
            f0 = frames[0]
            parts.append(f"largest frame difference: {f0.display} "
                         f"({fmt.shown_delta(f0.base_self_us_per_call, f0.head_self_us_per_call):+,.2f} us of "
                         "its own time)")
        if parts:
            text += f" In {head} − {base}, the " + "; the ".join(parts) + "."
        return text
    timed = [(l, t.cpu_us) for l in ok if (t := a.timings.get(l))]
    # the pair the page leads with, not the first two cases timed: of a compare --env run those were numpy@a and
    # torch@a, the anchor beside it, a pair nothing compares (the compared one is numpy@a against numpy@b)
    cpu = dict(timed)
    first = next((p for p in a.pairs if p.base in cpu and p.head in cpu), None)
    unsampled = f"there is no stack diff to say where ({why_unsampled(a)})."
    if first is not None and first.anchored is not None:
        # the pair's line just above gives the anchored ratio and difference: said again here, it read as new
        return (f"There is no stack diff to say where {first.head}'s difference from {first.base} comes from "
                f"({why_unsampled(a)}).")
    if first is not None or len(timed) >= 2:
        (x, tx), (y, ty) = ((first.base, cpu[first.base]), (first.head, cpu[first.head])) if first else timed[:2]
        return (f"{y} takes {ty:,.2f} us per call on the host against {x}'s {tx:,.2f} us ({ty / tx:.2f}×); "
                + unsampled)
    if timed:
        return f"One case measured: {timed[0][0]}, {timed[0][1]:,.2f} us per call on the host."
    return "No case finished; nothing was measured."


def why_unsampled(a: Analysis) -> str:
    """Why the page has no stack diff, in its words: a --no-sample run was told 'fewer than two cases were
    sampled', where none was, and why."""
    sampled = attribution.sampled_labels(a.run)
    if not sampled and a.run.config.recorded.get("sample") is False:
        return "the run was made with --no-sample" if a.run.kind != "sweep" else "the sweep ran without --sample"
    if len(sampled) == 1:
        return f"only {sampled[0]} was sampled"
    return "no case was sampled" if not sampled else "fewer than two cases were sampled"
