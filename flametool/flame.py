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

from . import layers as ly
from . import stacks as st
from .attribution import Profile

DISPLAY_THRESHOLD = 0.002  # of the root's width


@dataclass
class Tree:
    name: str
    layer: str
    total: int = 0
    self: int = 0
    children: dict[str, "Tree"] = field(default_factory=dict)


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


def case_tree(profile: Profile) -> Tree:
    """The case's call tree; each node's layer is the one its stack resolved it to (an inlined header
    frame takes its caller's layer, so the same name can sit in different layers under different callers)."""
    root = Tree(f"all: {profile.label}", "")
    for s, lays in zip(profile.stacks, profile.stack_layers()):
        node = root
        node.total += s.count
        for name, layer in zip(s.frames, lays):
            node = node.children.get(name) or node.children.setdefault(name, Tree(name, layer))
            node.total += s.count
        node.self += s.count
    return root


def case_graph(profile: Profile, strings: Strings, gid: str, threshold: float = DISPLAY_THRESHOLD) -> Graph:
    """The case's call tree (case_tree) pruned and packed into rows; computed from the stacks sorted
    (st.SortedStacks), so that only the nodes drawn, and the children of those, are ever visited."""
    view = st.SortedStacks([profile.stacks])
    layers = profile.stack_layers()
    root_total = view.total(0, 0, len(view))
    graph = Graph(gid, "case", profile.label, extra={"total_us": profile.us(root_total)})
    floor = threshold * root_total
    rows = graph.rows

    def walk(depth: int, a: int, b: int, parent: int) -> None:
        for name, i, j in view.children(depth, a, b):
            total = view.total(0, i, j)
            if total < floor or total == 0:
                graph.pruned_nodes += view.nodes(depth + 1, i, j)
                graph.pruned_us += profile.us(total)
                continue
            idx = len(rows)
            # a node's layer is its frame's in any stack under it: layers resolve from the callers down
            layer = layers[view.index[i]][depth]
            rows.append([parent, strings(name), strings(layer),
                         round(profile.us(total), 4), round(profile.us(view.own(0, depth + 1, i, j)), 4)])
            walk(depth + 1, i, j, idx)

    rows.append([-1, strings(f"all: {profile.label}"), strings(""), round(profile.us(root_total), 4), 0.0])
    walk(0, 0, len(view), 0)
    graph.drawn_nodes = len(rows)
    return graph


def count_nodes(node: Tree) -> int:
    return 1 + sum(count_nodes(c) for c in node.children.values())


def diff_graph(case_diff: dict, strings: Strings, gid: str, threshold: float = DISPLAY_THRESHOLD) -> Graph | None:
    """The differential graph from run.json's diff.flamegraph (nodes parents first, us per call)."""
    fg = case_diff.get("flamegraph") or {}
    nodes = fg.get("nodes") or []
    base, head = case_diff["base"], case_diff["head"]
    graph = Graph(gid, "diff", f"{head} vs {base}", extra={"base": base, "head": head,
                                                            "width_from": fg.get("width_from", "head")})
    if "threshold" in fg:  # pruned already, by diff.flamegraph at this threshold: these nodes are all drawn
        if fg["threshold"] != threshold:
            raise ValueError(f"the diff's flame graph was pruned at {fg['threshold']}, not {threshold}")
        head_root, base_root = fg["head_total_us"], fg["base_total_us"]
        graph.pruned_nodes, graph.pruned_us = fg["pruned_nodes"], fg["pruned_us"]
    else:
        tops = [n for n in nodes if n.get("parent") is None]
        head_root = sum(n["head_total_us_per_call"] for n in tops)
        base_root = sum(n["base_total_us_per_call"] for n in tops)
    graph.extra |= {"head_total_us": head_root, "base_total_us": base_root}
    if not nodes and not graph.pruned_nodes:
        return None
    # a node is kept when it is visible with either side's widths (the page can draw both)
    floor_h, floor_b = threshold * head_root, threshold * base_root
    rows = graph.rows
    rows.append([-1, strings(f"all: {head} vs {base}"), strings(""), round(head_root, 4), round(base_root, 4), 0.0, 0.0])
    row_of: dict[int, int] = {}
    dropped: set[int] = set()
    for n in nodes:
        parent = n.get("parent")
        if parent in dropped:
            dropped.add(n["id"])
            graph.pruned_nodes += 1
            continue
        ht, bt = n["head_total_us_per_call"], n["base_total_us_per_call"]
        if (ht < floor_h or ht == 0) and (bt < floor_b or bt == 0):
            dropped.add(n["id"])
            graph.pruned_nodes += 1
            graph.pruned_us += max(ht, bt)
            continue
        row_of[n["id"]] = len(rows)
        rows.append([0 if parent is None else row_of[parent], strings(n["frame"]), strings(n.get("layer") or ly.OTHER),
                     round(ht, 4), round(bt, 4), round(n["head_self_us_per_call"], 4), round(n["base_self_us_per_call"], 4)])
    graph.drawn_nodes = len(rows)
    return graph
