"""The report's flame graphs: each sampled case's, its other threads', and one differential graph per compared
pair, with the strings, short names and colours the page's script draws them from (one JSON payload)."""

from __future__ import annotations

from dataclasses import dataclass

from markupsafe import Markup

from . import charts
from ..analyse import flamegraph as flame, naming
from ..analyse.compare import Analysis
from ..analyse.treediff import PairDiff
from .jinja_env import script_json


@dataclass
class FlameGraphs:
    graphs: list[dict]  # id, kind, title, caption
    data: Markup
    threshold: str
    note: str


def flame_graphs(a: Analysis, diffs: list[PairDiff]) -> FlameGraphs:
    """The page's flame graphs: those the analysis made (Analysis.flames, of the default view's diffs), or made
    here for an analysis that was not completed or for other diffs."""
    made = a.flames
    if made is None or [id(d) for d in diffs] != [id(d) for d in a.views["caller"][1]]:
        made = flame.flame_set(a.profiles.values(), [t.profile for t in a.threads.values()], diffs)
    strings, graphs, pair_of = made.strings, made.graphs, made.pair_of
    diff_graph = bool(pair_of)
    pct = f"{flame.DISPLAY_THRESHOLD:.1%}"
    meta = []
    for g in graphs:
        caption = (f"{g.pruned_nodes} frames under {pct} of the total are not drawn (together {g.pruned_us:,.2f} us per call)"
                   if g.pruned_nodes else f"every frame drawn (none under {pct} of the total)")
        meta.append({"id": g.id, "kind": g.kind, "title": g.title, "caption": caption + f"; {g.drawn_nodes} drawn.",
                     "pair": pair_of.get(g.id)})
    payload = {
        "strings": strings.items,
        # short forms of long C++ names for the boxes (templates folded); tooltips show the full name
        "short": {i: short for i, name in enumerate(strings.items) if (short := naming.display_name(name, 120)) != name},
        # sorted: the same run gives the same page, byte for byte, whichever process renders it
        "colours": {layer: charts.colour(layer) for layer in sorted({strings.items[r[2]] for g in graphs for r in g.rows})},
        "more": charts.MORE, "less": charts.LESS,
        "graphs": made.rows,
    }
    note = "" if graphs else "No case has stacks to draw (not sampled, or every sampled case failed)."
    if not diff_graph and graphs:
        note = "No differential graph: it needs two sampled cases."
    return FlameGraphs(meta, script_json(payload), pct, note)
