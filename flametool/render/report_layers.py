"""The report's layer and hot-frame sections: host time per call by layer for every analysed case with each
compared pair's differences (in both views of the system libraries), each case's hottest frames and each pair's
frames that differ."""

from __future__ import annotations

from dataclasses import dataclass, field

from . import charts, format as fmt
from ..analyse.attribution import CaseCosts, Skipped
from ..analyse.treediff import LayerDelta, PairDiff

num, pm = fmt.num, fmt.pm


TOP_FRAMES = 40
TOP_DIFF = 40
LAYER_RULE = ("Layers come from the rules in layers.json. By default a frame of a system library (libc, malloc, "
              "pthread locks, the dynamic loader, libstdc++) is charged to the layer that called it, so cuBLAS means "
              "cuBLAS with its locks and allocations, and the C library is counted where it is used; the other view "
              "keeps them as a layer of their own (the hot-frame tables and flame graphs use the default view).")


@dataclass
class LayerRow:
    layer: str
    colour: str
    values: list[str]
    deltas: list[tuple[str, str]]  # per compared pair: (text, "more" | "less" | "")


@dataclass
class Layers:
    chart: charts.StackedChart | None
    delta_charts: list[charts.DeltaChart | None]  # per compared pair, in the order of Report.pairs
    labels: list[str]
    rows: list[LayerRow]
    totals: list[str]
    total_deltas: list[str]
    closure: list[str]
    skipped: list[str]
    diff_titles: list[str]
    speed_notes: list[str] = field(default_factory=list)  # a pair's sides put at their common speed (anchored)
    se_key: str = fmt.share_se("layer")  # what the ± is, in every view's words


@dataclass
class FrameRow:
    frame: str  # full name, shown on hover
    display: str
    layer: str
    colour: str
    cells: list[tuple[str, float]]  # (text, sort key)


@dataclass
class FrameTable:
    id: str
    title: str
    headers: list[str]
    rows: list[FrameRow]
    note: str
    pair: int | None = None  # the compared pair it belongs to (Report.pairs), shown when that pair is chosen


def layer_section(analysis_data: dict[str, CaseCosts | Skipped], diffs: list[PairDiff]) -> Layers:
    done = {l: a for l, a in analysis_data.items() if isinstance(a, CaseCosts)}
    skipped = [f"{l}: no stack analysis ({a.reason})" for l, a in analysis_data.items() if isinstance(a, Skipped)]
    chart = charts.stacked_costs(done) if done else None
    deltas = [{r.layer: r for r in d.layers} for d in diffs]
    from ..analyse.layers import order

    def cell(d: LayerDelta | None) -> tuple[str, str]:
        if not d:
            return "", ""
        v = fmt.shown_delta(d.base_us_per_call, d.head_us_per_call)
        return fmt.pm(v, d.delta_se_us, sign=True), "more" if v > 0 else "less" if v < 0 else ""

    rows = []
    for layer in order({k for a in done.values() for k in a.layers} | {k for d in deltas for k in d}):
        values = [pm(a.layers[layer].us_per_call, a.layers[layer].se_us) if layer in a.layers
                  else "–" for a in done.values()]
        rows.append(LayerRow(layer, charts.colour(layer), values, [cell(d.get(layer)) for d in deltas]))
    delta_charts = []
    for d in diffs:
        shown = [r for r in d.layers if r.base_us_per_call or r.head_us_per_call]
        delta_charts.append(charts.delta(shown, d.base, d.head) if shown else None)
    closure = [f"{label}: {fmt.closure_sentence(a)}." for label, a in done.items()]
    return Layers(
        chart=chart, delta_charts=delta_charts,
        labels=list(done), rows=rows, totals=[num(a.us_per_call) for a in done.values()],
        total_deltas=[fmt.signed(fmt.shown_delta(d.base_us_per_call, d.head_us_per_call)) for d in diffs],
        closure=closure, skipped=skipped,
        diff_titles=[f"{d.head} − {d.base}" for d in diffs],
        speed_notes=[f"{d.head} − {d.base}: {d.at_speed}" for d in diffs if d.at_speed],
    )


def frame_tables(analysis_data: dict[str, CaseCosts | Skipped]) -> list[FrameTable]:
    tables = []
    for i, (label, a) in enumerate(analysis_data.items()):
        if isinstance(a, Skipped):
            continue
        rows = [FrameRow(f.frame, f.display or f.frame, f.layer_label or f.layer, charts.colour(f.layer), [
            (pm(f.self.us_per_call, f.self.se_us), f.self.us_per_call),
            (pm(f.total.us_per_call, f.total.se_us), f.total.us_per_call),
            (str(f.self.samples), f.self.samples),
        ]) for f in a.frames[:TOP_FRAMES]]
        total = len(a.frames)
        tables.append(FrameTable(f"frames-{i}", label, ["self us/call", "total us/call", "samples"], rows,
                                 f"{len(rows)} of {total} frames, by own (self) time, us per call. self: time in the frame's own code; "
                                 "total: with the frames it calls; samples: py-spy's stacks with the frame on top; "
                                 + fmt.share_se("frame") + "."))
    return tables


def diff_table(case_diff: PairDiff, pair: int) -> FrameTable:
    changed = [r for r in case_diff.frames if r.delta_us_per_call or r.delta_total_us_per_call]
    base, head = case_diff.base, case_diff.head
    rows = [FrameRow(r.frame, r.display or r.frame, r.layer_label or r.layer, charts.colour(r.layer), [
        (num(r.base_self_us_per_call), r.base_self_us_per_call),
        (num(r.head_self_us_per_call), r.head_self_us_per_call),
        (fmt.pm(fmt.shown_delta(r.base_self_us_per_call, r.head_self_us_per_call), r.delta_se_us, sign=True),
         r.delta_us_per_call),
        (fmt.signed(fmt.shown_delta(r.base_total_us_per_call, r.head_total_us_per_call)), r.delta_total_us_per_call),
    ]) for r in changed[:TOP_DIFF]]
    return FrameTable(f"frames-diff-{pair}", f"{head} − {base}", [f"{base} self", f"{head} self", "Δ self", "Δ total"],
                      rows, f"{len(rows)} of {len(changed)} frames that differ, largest difference in own time first, "
                      f"us per call. self: time in the frame's own code; total: with the frames it calls; Δ: {head} "
                      f"minus {base} (+: {head} spends more), {fmt.share_se('frame')}; frames "
                      "matched by name on the merged call tree" + (fmt.ROLE_KEY if any(r.role for r in changed) else "")
                      + "."
                      + (f" {case_diff.at_speed}." if case_diff.at_speed else ""), pair)
