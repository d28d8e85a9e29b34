"""The call tree as arrays, one level per depth: what nodetree.build makes, without a Python object per node.

A large profile's tree has hundreds of thousands of nodes per case, and a tree of Node objects costs about
half a kilobyte and a few microseconds each; the report needs the few nodes wide enough to draw, the
number of the others, and per-frame sums. Here the stacks (of one side or several) become flat arrays of
frame ids, and each depth is one numpy pass: the nodes at depth d are the distinct (parent node, frame)
pairs of the stacks that reach that depth. Frame ids are the ranks of the names in sorted order, so a
node's children, sorted by id, are sorted by name, as tree.Node.pruned_walk visits them.

Sample counts are summed exactly: as float64 while every sum stays below 2**53, else as Python integers.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain
from typing import Callable, Iterator, Sequence

import numpy as np

from ..run.folded import Stack

EXACT_FLOAT = 2**53


@dataclass
class Level:
    """The nodes at one depth, sorted by (parent, frame id)."""

    parent: np.ndarray  # index of the parent in the level above (depth 0: 0, the root)
    frame: np.ndarray  # frame id (an index into CallTree.names)
    total: list[np.ndarray]  # per side: samples through the node
    self: list[np.ndarray]  # per side: samples that end at the node
    first_row: np.ndarray  # the first stack, in stack order, that goes through the node
    first_end: np.ndarray  # the first stack that ends at the node (-1: none does)
    children: np.ndarray | None = None  # node i's children are [children[i], children[i+1]) of the next level


@dataclass
class CallTree:
    names: list[str]  # sorted; a frame id is an index into it
    levels: list[Level]
    root_total: list[int]  # per side
    root_self: list[int]
    end_level: np.ndarray  # per stack (stacks of all sides, in order): the depth it ends at (-1: no frames)
    end_node: np.ndarray  # and its node there

    @property
    def nodes(self) -> int:
        """Nodes below the root (tree.count(root) - 1)."""
        return sum(len(level.frame) for level in self.levels)

    def children(self, depth: int, index: int) -> range:
        """The nodes at depth + 1 under node `index` of `depth` (depth -1: the root), in name order."""
        if depth < 0:
            return range(len(self.levels[0].frame)) if self.levels else range(0)
        c = self.levels[depth].children
        return range(int(c[index]), int(c[index + 1])) if c is not None else range(0)

    def pruned_walk(self, keep: Callable[[int, int], bool]) -> Iterator[tuple[int, int, tuple[int, int], bool]]:
        """(depth, index, parent as (depth, index), kept) below the root, parents before children, children by
        name; the subtree of a node that `keep` refuses is not visited. (tree.Node.pruned_walk, on arrays.)"""
        todo = [(0, i, (-1, 0)) for i in reversed(self.children(-1, 0))]
        while todo:
            depth, index, parent = todo.pop()
            kept = keep(depth, index)
            yield depth, index, parent, kept
            if kept and depth + 1 < len(self.levels):
                todo.extend((depth + 1, c, (depth, index)) for c in reversed(self.children(depth, index)))


def concat(tree: CallTree, field: str, side: int | None = None) -> np.ndarray:
    """One per-node array over every depth, level after level."""
    parts = [getattr(level, field) if side is None else getattr(level, field)[side] for level in tree.levels]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def depths(tree: CallTree) -> np.ndarray:
    """Each node's depth, in concat's order."""
    return np.repeat(np.arange(len(tree.levels)), [len(level.frame) for level in tree.levels])


def parents(tree: CallTree) -> np.ndarray:
    """Each node's parent as an index in concat's order (-1: the root)."""
    offsets = np.cumsum([0] + [len(level.frame) for level in tree.levels])
    parts = [np.full(len(tree.levels[0].frame), -1, dtype=np.int64)] if tree.levels else []
    parts += [level.parent + offsets[d] for d, level in enumerate(tree.levels) if d > 0]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def _sums(index: np.ndarray, weights: np.ndarray, n: int) -> np.ndarray:
    """Sum of weights per index value (0..n-1), exactly."""
    if weights.dtype == object:
        out = np.zeros(n, dtype=object)
        np.add.at(out, index, weights)
        return out
    return np.bincount(index, weights=weights, minlength=n).astype(np.int64)


def build(sides: Sequence[Sequence[Stack]]) -> CallTree:
    """The merged tree of one or more sides' stacks (nodetree.build's, as arrays)."""
    stacks = [s for side in sides for s in side]
    side_of = np.repeat(np.arange(len(sides)), [len(side) for side in sides])
    names = sorted(set(chain.from_iterable(s.frames for s in stacks)))
    ids = {name: i for i, name in enumerate(names)}
    lengths = np.fromiter(map(len, (s.frames for s in stacks)), dtype=np.int64, count=len(stacks))
    flat = np.fromiter(map(ids.__getitem__, chain.from_iterable(s.frames for s in stacks)), dtype=np.int32,
                       count=int(lengths.sum()))
    starts = np.zeros(len(stacks), dtype=np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    counts = [s.count for s in stacks]
    exact = all(0 <= c for c in counts) and sum(counts) < EXACT_FLOAT
    counted = np.array(counts, dtype=np.float64 if exact else object)
    weights = [np.where(side_of == k, counted, 0) for k in range(len(sides))]
    sums = [int(w.sum()) for w in weights]
    width = max(len(names), 1)
    end_level = np.full(len(stacks), -1, dtype=np.int64)
    end_node = np.zeros(len(stacks), dtype=np.int64)
    root_self = [int(w[lengths == 0].sum()) for w in weights]
    levels: list[Level] = []
    active = np.flatnonzero(lengths > 0)  # the stacks that reach this depth, in stack order
    node = np.zeros(len(active), dtype=np.int64)  # each one's node at the depth above
    depth = 0
    last_row = np.int64(len(stacks))
    while active.size:
        key = node * width + flat[starts[active] + depth]
        uniq, inv = np.unique(key, return_inverse=True)
        inv = inv.reshape(-1)
        n = len(uniq)
        ending = lengths[active] == depth + 1
        first_row = np.full(n, last_row)
        np.minimum.at(first_row, inv, active)
        first_end = np.full(n, last_row)
        np.minimum.at(first_end, inv[ending], active[ending])
        first_end[first_end == last_row] = -1
        # node, frame and stack numbers fit 32 bits: half the memory of a large profile's tree
        level = Level(parent=(uniq // width).astype(np.int32), frame=(uniq % width).astype(np.int32),
                      total=[_sums(inv, w[active], n) for w in weights],
                      self=[_sums(inv[ending], w[active][ending], n) for w in weights],
                      first_row=first_row.astype(np.int32), first_end=first_end.astype(np.int32))
        if levels:
            levels[-1].children = np.searchsorted(level.parent, np.arange(len(levels[-1].frame) + 1)).astype(np.int32)
        levels.append(level)
        end_level[active[ending]] = depth
        end_node[active[ending]] = inv[ending]
        active, node = active[~ending], inv[~ending]
        depth += 1
    return CallTree(names, levels, sums, root_self, end_level, end_node)


def node_layers(tree: CallTree, own: Sequence[str], inherit: str, other: str, charged: frozenset[str],
                view: str) -> tuple[list[str], list[np.ndarray]]:
    """Each node's layer as layers.resolve gives it for the stacks through the node (a node's layer depends
    on its path only): `own` is each frame id's own layer, INHERIT takes the caller's (`other` at the root),
    and in the 'caller' view a charged layer takes its caller's too, except at the root. Returns the layer
    names and, per depth, each node's index into them."""
    layer_names = sorted(set(own) | {other})
    lid = {l: i for i, l in enumerate(layer_names)}
    own_ids = np.array([lid[l] for l in own] or [0], dtype=np.int64)
    inherit_id = lid.get(inherit, -1)
    charged_ids = np.array([view == "caller" and l in charged for l in layer_names])
    out: list[np.ndarray] = []
    above_first = above_final = None
    for depth, level in enumerate(tree.levels):
        mine = own_ids[level.frame]
        parent_first = np.full(len(mine), lid[other]) if above_first is None else above_first[level.parent]
        first = np.where(mine == inherit_id, parent_first, mine)  # layers.resolve's first pass
        final = first if above_final is None else np.where(charged_ids[first], above_final[level.parent], first)
        out.append(final)
        above_first, above_final = first, final
    return layer_names, out
