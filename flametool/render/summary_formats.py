"""A summary (flametool.analyse.summary.Summary) for CI and scripts: plain text, Markdown that reads as a pull-request
comment, or JSON of a documented, versioned schema (docs/summary-json.md). Every figure is the analysis's;
here they are only laid out, with the words of flametool.render.format where the terminal says the same thing."""

from __future__ import annotations

import json
import math
from typing import Any, Callable

from . import aligned_lines, format as fmt, lines_view
from ..run.stats import Interval
from ..run.record import a_kind
from ..analyse import countdiff
from ..analyse.summary import SCHEMA, VERSION, HeadlineRow, PairSummary, Summary, failed_text
from .base import Renderer


# how an interval is introduced in its brackets: the text says "95%: " in each; a Markdown table says "95% interval"
# once, in its header, and a cell reads "0.666× (0.655 to 0.678)"
SAID = "95%: "


def ratio_interval(iv: Interval | None, said: str = SAID) -> str:
    """A ratio's interval in brackets after it: ' (95%: 0.655 to 0.678)', or ' (no interval)'."""
    return f" ({said}{fmt.interval(iv, lambda v: f'{v:.3f}')})" if iv else " (no interval)"


def ratio_text(p: PairSummary, said: str = SAID) -> str:
    c = p.change
    return f"{fmt.ratio(c.ratio)}{ratio_interval(c.interval, said)}"


def diff_text(p: PairSummary, said: str = SAID, unit: str = " us per call") -> str:
    """'-5.91 us per call (95%: -6.11 to -5.71) at cupy's 17.72 us'; Markdown's cell, under a header that says
    the unit and the 95% once: '-5.91 (-6.11 to -5.71) at cupy's 17.72 us'."""
    if p.diff_us is None:
        return fmt.DASH
    iv = f" ({said}{fmt.interval(p.diff_interval, fmt.signed)})" if p.diff_interval else ""
    if not p.base_us:
        at = ""
    elif p.change.anchored is not None:
        at = f" at the common speed of both sides ({p.base} {fmt.us(p.base_us)} there)"
    else:
        at = f" at {p.base}'s {fmt.us(p.base_us)}"
    shown = p.diff_us if p.change.anchored is not None else fmt.difference(p.diff_us, p.base_us)
    return f"{fmt.signed(shown)}{unit}{iv}{at}"


def beside_text(p: PairSummary) -> str | None:
    """The absolute figures and the anchor's own change, beside an anchored change; or why there is no anchor."""
    a = p.change.anchored
    if a is not None:
        return fmt.anchored_lines(a, p.base, p.head, p.head_where, p.change.anchor_caution is not None)[1]
    return p.change.no_anchor


def speed_text(p: PairSummary) -> str | None:
    """What the speed adjustment of an anchored change did (slope, each side's speed range, the unadjusted
    figure beside), in one line; None when the change is not speed-adjusted."""
    a = p.change.anchored
    return a.speed.sentence(p.base, p.head) if a is not None and a.speed is not None else None


def wide_text(p: PairSummary) -> str | None:
    """The line compare prints under a pair whose interval is wide (the processes disagree, and what would
    settle it): a summary, in every format, keeps it."""
    f = p.change.absolute if p.change.anchored is None else None
    return fmt.wide_note(f) if f is not None else None


def stop_text(s: Summary, p: PairSummary) -> str | None:
    """The line compare prints under a pair that it stopped adding processes for before its interval settled
    (PairSummary.stopped): a summary, in every format, keeps it."""
    reach = p.change.reach
    return fmt.stop_note(p.stopped, bool(s.environments), reach) if p.stopped is not None and reach is not None else None


def layer_text(p: PairSummary) -> str | None:
    r = p.largest_layer
    if r is None:
        return None
    # anchored: both sides' samples were put at their common speed (compare.at_common_speed), as the headline is
    speed = ", both at their common speed" if p.change.anchored is not None else ""
    return (f"{r.layer} {fmt.signed(fmt.shown_delta(r.base_us_per_call, r.head_us_per_call))} ± {r.delta_se_us:,.2f} us "
            f"({fmt.num(r.base_us_per_call)} → {fmt.num(r.head_us_per_call)}{speed})")


def frame_text(p: PairSummary, code: bool = False) -> str | None:
    r = p.largest_frame
    if r is None:
        return None
    name = fmt.code_span(r.display) if code else fmt.visible(r.display)
    return (f"{name} ({r.layer_label}) {fmt.signed(fmt.shown_delta(r.base_self_us_per_call, r.head_self_us_per_call))} "
            f"± {r.delta_se_us:,.2f} us of its own time")


def line_texts(p: PairSummary, text: Callable[[str], str] = str) -> list[str]:
    """The source lines that differ most, one sentence each (lines_view.delta_sentence; `text` writes its words)."""
    return [lines_view.delta_sentence(d, text) for d in lines_view.changed(p.lines)[:lines_view.SUMMARY_LINES]]


def count_lines(p: PairSummary) -> list[str]:
    return [text for text, _ in p.counts.listed] if p.counts is not None else []  # made by the analysis


def counted(s: Summary) -> tuple[list[str], list[list[str]]]:
    """What a step does, counted: the notes said once for every pair, and each pair's own lines (count_lines, less
    those). With two or more pairs counted, a note on what every pair's sides could not count ('both: the case
    runs on the CPU ...') is said once, as of every case, and the sides whose one Python call is step() itself
    are named in one sentence: each pair had repeated them, word for word."""
    own = [count_lines(p) for p in s.pairs]
    diffs = [p.counts for p in s.pairs if p.counts is not None]
    if len(diffs) < 2:
        return [], own
    common = [n for n in diffs[0].notes if all(n in d.notes for d in diffs[1:])]
    alone = [countdiff.step_itself(d) for d in diffs]  # each pair's sides whose one Python call is step()
    sides = list(dict.fromkeys(name for names in alone for name in names))
    shared = [f"every case: {n.removeprefix('both: ')}" if n.startswith("both: ") else n for n in common]
    shared += [countdiff.step_itself_note(sides)] if sides else []
    said = set(common) | {countdiff.step_itself_note(names) for names in alone if names}
    return shared, [[t for t in lines if t not in said] for lines in own]


def sampled_key(s: Summary) -> str | None:
    """What the ± of the sampled differences is (the largest layer and frame, the lines that differ most), said
    once under them where a pair has any: the same words as the keys of every other view (format.share_se)."""
    if not any(layer_text(p) or frame_text(p) or line_texts(p) for p in s.pairs):
        return None
    return "layers, frames and lines: " + fmt.SHARE_SE.format(whose="its", one="one")


def title(s: Summary) -> str:
    if s.kind == "diff":
        return f"flametool diff: {s.base_run} (A) → {s.head_run} (B)"
    if s.kind in ("sweep", "atlas"):
        return f"flametool summary: {s.base_run} ({a_kind(s.kind)})"
    return f"flametool summary: {s.base_run}"


def row_ratio(r: HeadlineRow, said: str = SAID) -> str:
    """A sweep's or an atlas's row: its ratio with its interval, or why it has none."""
    f = r.figures
    if f is None or f.ratio is None:
        return r.note or fmt.DASH
    return f"{fmt.ratio(f.ratio)}{ratio_interval(f.ratio_interval, said)}" + (
        f"; {r.note}" if r.note else "")  # an op stopped part way says so


def row_units(r: HeadlineRow) -> str:
    f = r.figures
    return f"{r.measure}, over {f.units} {f.unit_name}" if f is not None and f.ratio is not None else r.measure


def row_where(s: Summary) -> str:
    return "op" if s.kind == "atlas" else "size"


def shape_text(p: PairSummary) -> str:
    """Where a run's figures are at the sample shape, not the shape asked for: 'at the sample shape 1024,1024,1024
    (requested 65536,24576,12288)', as compare's headline says it; else ''."""
    if p.requested_shape is None or p.shape is None:
        return ""
    return f"at the sample shape {fmt.shape(p.shape)} (requested {fmt.shape(p.requested_shape)})"


def cautions(s: Summary) -> list[tuple[str, str]]:
    """What the report's fairness list says first of a run, (tag, sentence) (fmt.cautions): cases of unlike work,
    other operand values or new outputs; none for a diff, a sweep or an atlas."""
    a = s.analysis
    return fmt.cautions(a, a.run) if a is not None else []


class TextSummary(Renderer[Summary]):
    """The summary as plain lines: for a log, or `flametool summary RUN` in a terminal."""

    name, kind = "text", Summary

    def render(self, s: Summary) -> str:
        lines = [title(s)] + [fmt.environment_line(e) for e in s.environments]
        lines += [l for l in (fmt.differences_text(s.differences), fmt.incomplete_text(s.incomplete)) if l]
        lines += [f"caution: {what}: {line}" for what, line in cautions(s)]
        shared, own = counted(s)
        for p, listed in zip(s.pairs, own):
            where = shape_text(p)
            lines.append(f"{p.label}{' ' + where if where else ''}: {ratio_text(p)} {p.change.how}, over {p.units}; "
                         f"{p.head} − {p.base} = {diff_text(p)}")
            lines += [f"  counted: {c}" for c in listed]  # under the headline: exact, per step
            for extra in (beside_text(p), speed_text(p), wide_text(p), stop_text(s, p)):
                if extra:
                    lines.append(f"  {extra}")
            layer, frame = layer_text(p), frame_text(p)
            if layer:
                lines.append(f"  largest layer difference: {layer}")
            if frame:
                lines.append(f"  largest frame difference: {frame}")
            lines += [f"  line that differs most: {t}" if i == 0 else f"    then: {t}" for i, t in enumerate(line_texts(p))]
            if p.not_sampled:
                lines.append(f"  {p.not_sampled}")
            if p.verdict is not None:
                lines.append(f"  --fail-above {p.verdict.threshold:g}%: {p.verdict.outcome}: {p.verdict.sentence}")
        lines += [f"counted, every comparison: {c}" for c in shared]
        if (se_key := sampled_key(s)) is not None:
            lines.append(se_key)
        if s.no_verdict:
            lines.append(s.no_verdict)
        for note in (s.not_compared, failed_text(s)):
            if note:
                lines.append(note)
        for r in s.rows:
            lines.append(f"{r.label} at {row_where(s)} {r.at}: {row_ratio(r)}"
                         + (f" {row_units(r)}" if r.figures is not None and r.figures.ratio is not None else ""))
        if not s.pairs and not s.rows:
            lines.append("nothing compared")
        if not s.complete and s.kind != "diff":
            lines.append("run incomplete: run.json holds what finished")
        return "\n".join(fmt.visible(l) for l in lines) + "\n"


def md(text: object) -> str:
    """Text for a Markdown table cell or line: no markup read from it (a label with '|' or '*' stays text; '~'
    is GitHub's strikethrough, '&' starts an entity and '$' GitHub's math: each escaped, as CommonMark allows for
    any ASCII punctuation)."""
    out = fmt.visible(text)
    for c in "\\`*_[]<>|#~&$":
        out = out.replace(c, "\\" + c)
    return out


def escaped(text: str | None) -> str | None:
    """md(text), or None for no text."""
    return md(text) if text else None


def table(head: list[str], rows: list[list[str]], lift: set[int]) -> list[str]:
    """A Markdown table, and a blank line; a column of `lift` whose cell is the same on every row is said once, in
    a line under the table ('measured: paired in the same processes, over 10 processes'), not on every row."""
    said = [i for i in sorted(lift) if rows and all(r[i] == rows[0][i] for r in rows)]
    kept = [i for i in range(len(head)) if i not in said]
    out = ["| " + " | ".join(head[i] for i in kept) + " |", "|" + "---|" * len(kept)]
    out += ["| " + " | ".join(r[i] for i in kept) + " |" for r in rows] + [""]
    return out + (["; ".join(f"{head[i]}: {rows[0][i]}" for i in said), ""] if said else [])


VERDICT_MARK = {"passed": "✅ passed", "slower": "❌ slower", "inconclusive": "⚠️ inconclusive"}


def verdict_line(s: Summary) -> str | None:
    """The run's verdict as the comment's first line, the worst pair's (the one that set the exit code), and how
    the others came out where there are several: '**❌ slower, exit 3** (of 3 comparisons: 2 slower, 1 passed):
    cupy vs cublas: +83.6% ...'. Without it a reader saw each outcome in a table column and the exit code nowhere."""
    v = s.verdict
    if v is None:
        return None
    given = [p.verdict.outcome for p in s.pairs if p.verdict is not None] + (
        [s.uncompared.outcome] if s.uncompared is not None else [])
    tally = ", ".join(f"{given.count(o)} {o}" for o in ("slower", "inconclusive", "passed") if o in given)
    of = f" (of {len(given)} comparisons: {tally})" if len(given) > 1 else ""
    return f"**{VERDICT_MARK[v.outcome]}, exit {v.exit_code}**{of}: {md(v.sentence)}"


class MarkdownSummary(Renderer[Summary]):
    """The summary as a pull-request comment: a heading, one table row per comparison, and under it what the
    absolute figures say, the largest layer and frame differences, the verdict and the environments."""

    name, kind = "markdown", Summary

    def render(self, s: Summary) -> str:
        out = [f"### {md(title(s))}", ""]
        verdict = verdict_line(s)
        if verdict:  # the answer CI acts on, first: the worst verdict and the exit code it gave
            out += [verdict, ""]
        # an incomplete run says so with the notes at the top (a sweep stopped part-way said it only at the bottom)
        unfinished = None if s.complete else "Run incomplete: run.json holds what finished"
        for note in (unfinished, fmt.differences_text(s.differences), fmt.incomplete_text(s.incomplete),
                     s.no_verdict, s.not_compared, failed_text(s)):
            if note:
                out += [f"**{md(note)}**", ""]
        warned = [f"⚠️ {md(f'{what}: {line}')}" for what, line in cautions(s)]
        out += warned + ([""] if warned else [])
        # a verdict column where the pairs' outcomes differ; where they are one, the verdict line above says it (its
        # tally: 'of 3 comparisons: 3 passed'), and a column would repeat it on every row
        given = [p.verdict for p in s.pairs if p.verdict is not None]
        judged = given[0].threshold if len({v.outcome for v in given}) > 1 else None
        if s.pairs:
            # the interval's 95% and the difference's unit said once, in the header; how a ratio was measured
            # under the table where every row's is the same; --fail-above (one for the run) in the header
            head = ["comparison", "ratio (95% interval)", "difference, us per call (95% interval)", "measured"] + (
                [f"verdict (--fail-above {judged:g}%)"] if judged is not None else [])
            rows = []
            for p in s.pairs:
                row = [md(p.label), md(ratio_text(p, "")), md(diff_text(p, "", "")),
                       md(f"{p.change.how}, over {p.units}" + (f", {shape_text(p)}" if shape_text(p) else ""))]
                if judged is not None:
                    row.append(md(VERDICT_MARK[p.verdict.outcome]) if p.verdict else "")
                rows.append(row)
            out += table(head, rows, lift={3})
            shared, own = counted(s)
            for p, listed in zip(s.pairs, own):  # under the table of ratios: what a step does on each side, exact
                if listed:
                    out += [f"**{md(p.label)}: counted per step** (exact)", ""]
                    out += [f"- {md(c)}" for c in listed] + [""]
            if shared:
                out += ["**counted, every comparison**", ""] + [f"- {md(c)}" for c in shared] + [""]
        elif s.rows:
            head = ["comparison", row_where(s), "ratio (95% interval)", "measured"]
            out += table(head, [[md(x) for x in (r.label, r.at, row_ratio(r, ""), row_units(r))] for r in s.rows],
                         lift={0, 3})
        else:
            out += ["Nothing compared.", ""]
        for p in s.pairs:
            # each note in Markdown: its words escaped (md), the frame's name and the lines' code as code spans; the
            # speed line says 'speed adjustment: ...' itself: no key before it
            notes = [("beside it", escaped(beside_text(p))), ("", escaped(speed_text(p))),
                     ("⚠️ interval", escaped(wide_text(p))), ("⚠️ stopped", escaped(stop_text(s, p))),
                     ("largest layer difference", escaped(layer_text(p))),
                     ("largest frame difference", frame_text(p, code=True)), ("", escaped(p.not_sampled)),
                     # the verdict that leads the comment (verdict_line) is not said again
                     ("verdict", escaped(p.verdict.sentence if p.verdict and p.verdict is not s.verdict else None))]
            notes += [("lines that differ most" if i == 0 else "then", t) for i, t in enumerate(line_texts(p, md))]
            notes = [(k, v) for k, v in notes if v]
            if notes:
                out.append(f"**{md(p.label)}**")
                out.append("")
                for key, value in notes:
                    out.append(f"- {key}: {value}" if key else f"- {value}")
                out.append("")
        if (se_key := sampled_key(s)) is not None:
            out += [md(se_key), ""]
        if s.environments:
            out += ["<details><summary>environments</summary>", ""]
            out += [f"- {md(fmt.environment_line(e))}" for e in s.environments] + ["", "</details>", ""]
        if any(p.diff_us is not None for p in s.pairs):  # a sweep's or an atlas's comment shows no microseconds
            out.append("Ratios relative to an anchor (or paired in the same processes) move far less from run to run "
                       "than microseconds, which hold for the speed the host ran at in these runs (words: "
                       "docs/glossary.md).")
        return "\n".join(out) + "\n"


def figure(value: float | None, iv: Interval | None) -> dict[str, Any] | None:
    if value is None:
        return None
    return {"value": value, "low": iv.low if iv else None, "high": iv.high if iv else None}


def pair_json(p: PairSummary, s: Summary) -> dict[str, Any]:
    c, a = p.change, p.change.anchored
    absolute = c.absolute
    layer, frame, v = p.largest_layer, p.largest_frame, p.verdict
    return {
        "label": p.label, "base": p.base, "head": p.head,
        "shape": p.shape, "requested_shape": p.requested_shape,
        "measure": "anchored" if a else ("paired" if absolute is not None and absolute.paired else "absolute"),
        "anchor": a.anchor if a else None,
        "units": p.units,
        "ratio": figure(c.ratio, c.interval),
        "difference_us": figure(p.diff_us, p.diff_interval),
        "at_us": p.base_us,
        "absolute": None if absolute is None or a is None else {
            "ratio": figure(absolute.ratio, absolute.ratio_interval),
            "difference_us": figure(absolute.diff_us, absolute.diff_interval)},
        "anchor_change": a.anchor_change if a and math.isfinite(a.anchor_change) else None,
        "speed_adjustment": None if a is None or a.speed is None else {
            **a.speed.to_json(), "sentence": speed_text(p)},
        "no_anchor": c.no_anchor,
        "stopped": None if p.stopped is None else {"reason": p.stopped.reason, "limit": p.stopped.limit,
                                                   "most": p.stopped.most, "sentence": stop_text(s, p)},
        "largest_layer": None if layer is None else {
            "layer": layer.layer, "base_us": layer.base_us_per_call, "head_us": layer.head_us_per_call,
            "delta_us": layer.delta_us_per_call, "se_us": layer.delta_se_us},
        "largest_frame": None if frame is None else {
            "frame": frame.display, "layer": frame.layer_label, "base_self_us": frame.base_self_us_per_call,
            "head_self_us": frame.head_self_us_per_call, "delta_us": frame.delta_us_per_call, "se_us": frame.delta_se_us},
        "verdict": None if v is None else verdict_json(v),
        "counts": countdiff.to_json(p.counts) if p.counts is not None else None,
        "layers": [{"layer": r.layer, "base_us": r.base_us_per_call, "head_us": r.head_us_per_call,
                    "delta_us": r.delta_us_per_call, "se_us": r.delta_se_us} for r in p.layers],
        "frames": [{"frame": r.display, "name": r.frame, "layer": r.layer_label,
                    "base_self_us": r.base_self_us_per_call, "head_self_us": r.head_self_us_per_call,
                    "base_total_us": r.base_total_us_per_call, "head_total_us": r.head_total_us_per_call,
                    "delta_us": r.delta_us_per_call, "delta_total_us": r.delta_total_us_per_call,
                    "se_us": r.delta_se_us} for r in p.frames],
        "lines": lines_view.deltas_json(p.lines),
    }


def row_json(r: HeadlineRow) -> dict[str, Any]:
    f = r.figures
    measured = f is not None and f.ratio is not None
    return {"label": r.label, "base": r.base, "head": r.head, "at": r.at, "shape": r.shape,
            "ratio": figure(f.ratio, f.ratio_interval) if f is not None and measured else None,
            "paired": f.paired if f is not None and measured else None,
            "units": f"{f.units} {f.unit_name}" if f is not None and measured else None,
            "measure": r.measure, "note": r.note}


def verdict_json(v) -> dict[str, Any]:
    return {"outcome": v.outcome, "exit_code": v.exit_code, "threshold_pct": v.threshold,
            "processes_to_settle": v.processes, "sentence": v.sentence}


class JsonSummary(Renderer[Summary]):
    """The summary as JSON (docs/summary-json.md): {"schema": "flametool-summary", "version": 3, ...}."""

    name, kind = "json", Summary

    def render(self, s: Summary) -> str:
        doc = {
            "schema": SCHEMA, "version": VERSION, "kind": s.kind, "base_run": s.base_run, "head_run": s.head_run,
            "complete": s.complete,
            "incomplete": s.incomplete,
            "differences": [{"what": d.what, "base": d.base, "head": d.head, "unlike": d.unlike, "note": d.note}
                            for d in s.differences],
            "no_verdict": s.no_verdict,
            "not_compared": s.not_compared,
            "failed": s.failed,
            "environments": [{"name": e.name, "python": e.python, "executable": e.executable,
                              "python_version": e.python_version, "versions": e.versions, "describe": e.describe}
                             for e in s.environments],
            "cases": [{"label": l, "us_per_call": p.us, "low": p.interval.low if p.interval else None,
                       "high": p.interval.high if p.interval else None, "units": f"{p.units} {p.unit_name}",
                       "counts": s.counts[l].to_json() if l in s.counts else None,
                       "shape": s.analysis.run.results[l].sample_shape if s.analysis is not None else None}
                      for l, p in s.cases.items()],
            "cautions": [{"kind": what, "text": line} for what, line in cautions(s)],
            "pairs": [pair_json(p, s) for p in s.pairs],
            **({"aligned_lines": aligned_lines.to_json(s.aligned)} if s.aligned is not None else {}),
            "rows": [row_json(r) for r in s.rows],
            "verdict": verdict_json(s.verdict) if s.verdict is not None else None,
        }
        return json.dumps(doc, indent=2, allow_nan=False) + "\n"
