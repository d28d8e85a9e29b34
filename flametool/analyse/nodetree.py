"""The call tree as nested nodes: a case's stacks, or two cases' stacks merged, with sample counts. The report
builds the same tree as arrays (calltree.py), which a profile of millions of stacks needs; this form is the one
to walk and to check (diff(with_tree=True), and the tests hold the array-built graphs against it).

A node holds one count per side: one side for a case's own tree (its flame graph), two for a diff (base,
head: the merged tree the differential flame graph and the frame deltas come from). Frames are matched by
normalized name, so the shared part of two stacks lines up under the same path. Each node carries the layer
its stack resolved it to (an inlined header frame takes its caller's layer, so one name can sit in different
layers under different callers).

Self-check, as pyinstrument's frame tree has: a node's total is its own (self) count plus its children's.
"""

from __future__ import annotations

from typing import Iterator

from .attribution import Profile


class Node:
    """One frame on one path. (__slots__: a large profile's tree has millions of these.)"""

    __slots__ = ("name", "layer", "total", "self", "children")

    def __init__(self, name: str, layer: str, total: list[int], self_: list[int]) -> None:
        self.name, self.layer = name, layer
        self.total = total  # samples per side, this node and everything under it
        self.self = self_  # samples per side that end here
        self.children: dict[str, Node] = {}

    def pruned_walk(self, keep) -> Iterator[tuple["Node", "Node", bool]]:
        """(node, parent, kept) below this one, parents before children, children by name; the subtree of a
        node that `keep` refuses is not visited (its top is yielded, with kept False)."""
        todo = [(c, self) for c in sorted(self.children.values(), key=lambda n: n.name, reverse=True)]
        while todo:
            node, parent = todo.pop()
            kept = keep(node)
            yield node, parent, kept
            if kept and node.children:
                todo.extend((c, node) for c in sorted(node.children.values(), key=lambda n: n.name, reverse=True))

    def walk(self, parent: "Node | None" = None, depth: int = 0) -> Iterator[tuple["Node", "Node | None", int]]:
        """(node, parent, depth) below this one, parents before children, children by name."""
        for child in sorted(self.children.values(), key=lambda n: n.name):
            yield child, self, depth
            yield from child.walk(self, depth + 1)

    def check(self) -> None:
        """total = self + children's totals, on every side, everywhere below (a build bug otherwise)."""
        for node in [self] + [n for n, _, _ in self.walk()]:
            for side in range(len(node.total)):
                under = node.self[side] + sum(c.total[side] for c in node.children.values())
                if under != node.total[side]:
                    raise AssertionError(f"call tree: {node.name!r} side {side}: total {node.total[side]} != {under}")


def build(profiles: list[Profile], root_name: str = "") -> Node:
    """The tree of one profile (one side) or of several merged (one side each, in order)."""
    sides = len(profiles)
    root = Node(root_name, "", [0] * sides, [0] * sides)
    for side, profile in enumerate(profiles):
        for s, lays in zip(profile.stacks, profile.stack_layers()):
            node = root
            node.total[side] += s.count
            for name, layer in zip(s.frames, lays):
                node = node.children.get(name) or node.children.setdefault(name, Node(name, layer, [0] * sides, [0] * sides))
                node.total[side] += s.count
            node.self[side] += s.count
    return root


def count(node: Node) -> int:
    """Nodes in this subtree, this one included (iterative: a path can be thousands of frames deep)."""
    n, todo = 0, [node]
    while todo:
        x = todo.pop()
        n += 1
        todo.extend(x.children.values())
    return n
