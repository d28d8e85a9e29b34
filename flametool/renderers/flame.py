"""Flame-graph data for the report: one call tree per case, and the case diff's merged tree, pruned to what
can be seen and packed into flat rows the page's script draws.

Rows are parents before children, so the script can lay them out in one pass. A node narrower than
DISPLAY_THRESHOLD of its graph's root is dropped with its subtree (its children are narrower still); a
real PyTorch profile has thousands of distinct stacks, most of them a few samples deep in libc, and
drawing them would make the page slow to load and impossible to read. What was dropped is counted so the
page can say so.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .. import layers as ly
from .. import tree
from ..attribution import Profile

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


def case_graph(profile: Profile, strings: Strings, gid: str, threshold: float = DISPLAY_THRESHOLD) -> Graph:
    root = tree.build([profile], f"all: {profile.label}")
    graph = Graph(gid, "case", profile.label, extra={"total_us": profile.us(root.total[0])})
    floor = threshold * root.total[0]
    rows = graph.rows
    row_of = {id(root): 0}
    rows.append([-1, strings(root.name), strings(""), round(profile.us(root.total[0]), 4), 0.0])
    for node, parent, kept in root.pruned_walk(lambda n: n.total[0] >= floor and n.total[0] > 0):
        if not kept:  # dropped with its subtree (its children are narrower still), counted once
            graph.pruned_nodes += tree.count(node)
            graph.pruned_us += profile.us(node.total[0])
            continue
        row_of[id(node)] = len(rows)
        rows.append([row_of[id(parent)], strings(node.name), strings(node.layer),
                     round(profile.us(node.total[0]), 4), round(profile.us(node.self[0]), 4)])
    graph.drawn_nodes = len(rows)
    return graph


def diff_graph(case_diff: dict, strings: Strings, gid: str, threshold: float = DISPLAY_THRESHOLD) -> Graph | None:
    """The differential flame graph, after Brendan Gregg's: widths from the head (the "after" side), colour
    from each frame's delta (head - base): red where head spends more, blue where less. A node also carries
    the base's widths, so the page can draw the negated graph (widths from the base) as well."""
    root: tree.Node = case_diff["tree"]
    ub, uh = case_diff["us_per_sample"]
    base, head = case_diff["base"], case_diff["head"]
    head_root, base_root = root.total[1] * uh, root.total[0] * ub
    graph = Graph(gid, "diff", f"{head} vs {base}", extra={"base": base, "head": head, "width_from": "head",
                                                            "head_total_us": head_root, "base_total_us": base_root})
    if not root.children:
        return None
    # a node is kept when it is visible with either side's widths (the page can draw both)
    floor_h, floor_b = threshold * head_root, threshold * base_root
    rows = graph.rows
    rows.append([-1, strings(f"all: {head} vs {base}"), strings(""), round(head_root, 4), round(base_root, 4), 0.0, 0.0])
    row_of = {id(root): 0}

    def visible(n: tree.Node) -> bool:
        ht, bt = n.total[1] * uh, n.total[0] * ub
        return not ((ht < floor_h or ht == 0) and (bt < floor_b or bt == 0))

    for node, parent, kept in root.pruned_walk(visible):
        ht, bt = node.total[1] * uh, node.total[0] * ub
        if not kept:
            graph.pruned_nodes += tree.count(node)
            graph.pruned_us += max(ht, bt)
            continue
        row_of[id(node)] = len(rows)
        rows.append([row_of[id(parent)], strings(node.name), strings(node.layer or ly.OTHER), round(ht, 4), round(bt, 4),
                     round(node.self[1] * uh, 4), round(node.self[0] * ub, 4)])
    graph.drawn_nodes = len(rows)
    return graph
