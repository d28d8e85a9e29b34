"""Flame-graph geometry, made by the analysis for the report: one call tree per case, and the case diff's
merged tree, pruned to what can be seen and packed into flat rows the page's script draws.

Rows are parents before children, so the script can lay them out in one pass. A node narrower than
DISPLAY_THRESHOLD of its graph's root is dropped with its subtree (its children are narrower still); a
real PyTorch profile has thousands of distinct stacks, most of them a few samples deep in libc, and
drawing them would make the page slow to load and impossible to read. What was dropped is counted so the
page can say so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from . import calltree, layers as ly, views
from .attribution import Profile
from .treediff import PairDiff

DISPLAY_THRESHOLD = 0.002  # of the root's width


@dataclass
class Graph:
    """One graph as the page's script reads it. Case rows: [parent, name, layer, total_us, self_us];
    diff rows: [parent, name, layer, head_total, base_total, head_self, base_self] (us per call).
    name and layer are indices into the shared string tables."""

    id: str
    kind: str  # "case" | "diff"
    title: str
    rows: list[list] = field(default_factory=list)
    pruned_nodes: int = 0
    pruned_us: float = 0.0
    drawn_nodes: int = 0
    extra: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"id": self.id, "kind": self.kind, "title": self.title, "rows": self.rows,
                "pruned_nodes": self.pruned_nodes, "pruned_us": self.pruned_us} | self.extra


class Strings:
    """A string table: long C++ names appear in many rows and across graphs, and are sent once."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {}
        self.items: list[str] = []

    def __call__(self, text: str) -> int:
        i = self.index.get(text)
        if i is None:
            i = self.index[text] = len(self.items)
            self.items.append(text)
        return i


@dataclass
class FlameSet:
    """A compare run's flame graphs as its report draws them: each sampled case's, each one's other threads', and
    one differential graph per compared pair that has one, in that order, over one string table; `pair_of`: the
    compared pair (its index among the diffs) of each differential graph, by graph id; `rows`: each graph as the
    page's script reads it (Graph.to_json)."""

    strings: Strings
    graphs: list[Graph]
    pair_of: dict[str, int]
    rows: list[dict]


def flame_set(profiles: Iterable[Profile], threads: Iterable[Profile | None], diffs: list[PairDiff]) -> FlameSet:
    """The flame graphs of the cases' `profiles`, of their other threads' (a case's None: none sampled; its graph
    id keeps its place) and of the pairs' `diffs`."""
    strings = Strings()
    graphs = [case_graph(p, strings, f"fg-{i}") for i, p in enumerate(profiles)]
    graphs += [case_graph(p, strings, f"fg-threads-{i}") for i, p in enumerate(threads) if p is not None]
    pair_of: dict[str, int] = {}
    for i, d in enumerate(diffs):
        g = diff_graph(d, strings, f"fg-diff-{i}")
        if g:
            graphs.append(g)
            pair_of[g.id] = i
    return FlameSet(strings, graphs, pair_of, [g.to_json() for g in graphs])


def case_graph(profile: Profile, strings: Strings, gid: str, threshold: float = DISPLAY_THRESHOLD) -> Graph:
    """A case's flame graph, its names and layers entered in `strings` row by row (made once per profile
    and threshold: see prepare_case_graph)."""
    kept = profile.flame_graph
    made = kept[1] if kept is not None and kept[0] == threshold else _case_graph(profile, Strings(), threshold)
    own, names = made
    graph = Graph(gid, own.kind, own.title, pruned_nodes=own.pruned_nodes, pruned_us=own.pruned_us,
                  drawn_nodes=own.drawn_nodes, extra=dict(own.extra))
    graph.rows = [[r[0], strings(names[r[1]]), strings(names[r[2]]), *r[3:]] for r in own.rows]
    return graph


def prepare_case_graph(profile: Profile, threshold: float = DISPLAY_THRESHOLD) -> None:
    """Make a case's flame graph now and keep it in the profile (with its own string table), so that the
    profile can travel without its call tree (compare.prepare)."""
    profile.flame_graph = (threshold, _case_graph(profile, Strings(), threshold))


def _case_graph(profile: Profile, strings: Strings, threshold: float) -> tuple[Graph, list[str]]:
    t = profile.call_tree()
    layer_names, layer_of = profile.node_layers()
    root_total = t.root_total[0]
    graph = Graph("", "case", profile.label, extra={"total_us": profile.us(root_total)})
    floor = threshold * root_total
    rows = graph.rows
    row_of = {(-1, 0): 0}
    rows.append([-1, strings(f"all: {profile.label}"), strings(""), round(profile.us(root_total), 4), 0.0])

    def keep(depth: int, i: int) -> bool:
        total = int(t.levels[depth].total[0][i])
        return total >= floor and total > 0

    for depth, i, parent, kept in t.pruned_walk(keep):
        level = t.levels[depth]
        total = int(level.total[0][i])
        if not kept:  # dropped with its subtree (its children are narrower still)
            graph.pruned_us += profile.us(total)
            continue
        row_of[depth, i] = len(rows)
        rows.append([row_of[parent], strings(t.names[level.frame[i]]), strings(layer_names[layer_of[depth][i]]),
                     round(profile.us(total), 4), round(profile.us(int(level.self[0][i])), 4)])
    graph.drawn_nodes = len(rows)
    graph.pruned_nodes = t.nodes - (len(rows) - 1)  # every node below the root is drawn or under a dropped one
    return graph, strings.items


def diff_graph(case_diff: PairDiff, strings: Strings, gid: str, threshold: float = DISPLAY_THRESHOLD) -> Graph | None:
    """The differential flame graph, after Brendan Gregg's: widths from the head (the "after" side), colour
    from each frame's delta (head - base): red where head spends more, blue where less. A node also carries
    the base's widths, so the page can draw the negated graph (widths from the base) as well. Drawn from the
    merged call tree of the diff's aligned stacks."""
    aligned = case_diff.aligned
    t = calltree.build([p.stacks for p in aligned])
    # a node's layer is the one its first stack resolves it to: the base's when a base stack goes through it
    layers = [calltree.node_layers(t, p.own_layers(t.names), ly.INHERIT, ly.OTHER, ly.charged(), views.DEFAULT_VIEW)
              for p in aligned]
    ub, uh = case_diff.us_per_sample
    base, head = case_diff.base, case_diff.head
    head_root, base_root = t.root_total[1] * uh, t.root_total[0] * ub
    graph = Graph(gid, "diff", f"{head} vs {base}", extra={"base": base, "head": head, "width_from": "head",
                                                            "head_total_us": head_root, "base_total_us": base_root})
    if not t.levels:
        return None
    # a node is kept when it is visible with either side's widths (the page can draw both)
    floor_h, floor_b = threshold * head_root, threshold * base_root
    rows = graph.rows
    rows.append([-1, strings(f"all: {head} vs {base}"), strings(""), round(head_root, 4), round(base_root, 4), 0.0, 0.0])
    row_of = {(-1, 0): 0}

    def widths(depth: int, i: int) -> tuple[float, float]:
        level = t.levels[depth]
        return int(level.total[1][i]) * uh, int(level.total[0][i]) * ub

    def visible(depth: int, i: int) -> bool:
        ht, bt = widths(depth, i)
        return not ((ht < floor_h or ht == 0) and (bt < floor_b or bt == 0))

    for depth, i, parent, kept in t.pruned_walk(visible):
        ht, bt = widths(depth, i)
        if not kept:
            graph.pruned_us += max(ht, bt)
            continue
        level = t.levels[depth]
        side = 0 if level.total[0][i] else 1
        names, of = layers[side]
        row_of[depth, i] = len(rows)
        rows.append([row_of[parent], strings(t.names[level.frame[i]]), strings(names[of[depth][i]] or ly.OTHER),
                     round(ht, 4), round(bt, 4), round(int(level.self[1][i]) * uh, 4), round(int(level.self[0][i]) * ub, 4)])
    graph.drawn_nodes = len(rows)
    graph.pruned_nodes = t.nodes - (len(rows) - 1)
    return graph
