"""Differences between two profiles (two cases of a run, or one case in two runs), on a merged call tree.

Frames are matched by normalized name, so the shared part of two stacks (cuBLAS, the driver, libc) lines
up under the same path and a difference shows where it really is. The top frame of every stack is the
case's own step() function, which has a different name in every case; it is matched as STEP_ROOT.

The differential flame graph follows Brendan Gregg's: the shape (widths) comes from the head profile
(the second, "after" side), the colour from the delta of each frame's time (head - base): red where head
spends more, blue where it spends less. A path that only the base has gets width 0 there, so each node
also carries the base's time, from which the negated graph (width from base) can be drawn.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from . import layers as ly
from . import stacks as st
from .attribution import Profile, attribute, frame_layers

STEP_ROOT = "step()"


def aligned(profile: Profile) -> list[st.Stack]:
    """Stacks with the case's step() frame, the root of each kept stack, renamed STEP_ROOT."""
    out = []
    frames = profile.frames
    for s in profile.stacks:
        # py-spy now and then puts an unnamed address above step() (a trampoline or an unwinding slip);
        # when a named frame follows, the stack is aligned at that one
        first = frames[s.frames[0]]
        if first.kind == "address":
            skip = next((i for i, n in enumerate(s.frames) if frames[n].kind != "address"), 0)
            s = st.Stack(s.frames[skip:], s.count)
            first = frames[s.frames[0]]
        if first.kind == "python":
            out.append(st.Stack((STEP_ROOT,) + s.frames[1:], s.count))
        elif first.kind == "loop":
            out.append(s)
        else:  # step is itself a native callable (step = np.matmul): it sits under STEP_ROOT
            out.append(st.Stack((STEP_ROOT,) + s.frames, s.count))
    return st.merge(out)


def aligned_profile(profile: Profile) -> Profile:
    frames = dict(profile.frames)
    frames[STEP_ROOT] = st.Frame(STEP_ROOT, "", "python")
    return Profile(profile.label, aligned(profile), frames, profile.us_per_call, profile.recorded_samples)


@dataclass
class Node:
    name: str
    self_n: list[int] = field(default_factory=lambda: [0, 0])
    total_n: list[int] = field(default_factory=lambda: [0, 0])
    children: dict[str, "Node"] = field(default_factory=dict)


def merged_tree(base: Profile, head: Profile) -> Node:
    root = Node("")
    for side, profile in enumerate((base, head)):
        for s in profile.stacks:
            node = root
            node.total_n[side] += s.count
            for name in s.frames:
                child = node.children.get(name)
                if child is None:  # (not setdefault: that would build a Node for every frame of every stack)
                    child = node.children[name] = Node(name)
                node = child
                node.total_n[side] += s.count
            node.self_n[side] += s.count
    return root


def _delta_se(base: Profile, head: Profile, nb: int, nh: int) -> float:
    return math.hypot(base.se(nb), head.se(nh))


def diff(base: Profile, head: Profile, flame_threshold: float | None = None) -> dict:
    """The "diff" record of run.json: layers, frames and the flame graph nodes, head minus base.
    With flame_threshold, the flame graph holds only the nodes a graph pruned at it draws (flamegraph)."""
    base, head = aligned_profile(base), aligned_profile(head)
    cb, ch = attribute(base), attribute(head)

    layer_rows = []
    for layer in ly.order(set(cb.layers) | set(ch.layers)):
        fb, fh = cb.layers.get(layer), ch.layers.get(layer)
        b, h = (fb.us_per_call if fb else 0.0), (fh.us_per_call if fh else 0.0)
        layer_rows.append({
            "layer": layer, "base_us_per_call": b, "head_us_per_call": h, "delta_us_per_call": h - b,
            "delta_se_us": _delta_se(base, head, fb.samples if fb else 0, fh.samples if fh else 0),
        })

    by_name_b = {f.frame: f for f in cb.frames}
    by_name_h = {f.frame: f for f in ch.frames}
    frame_rows = []
    for name in set(by_name_b) | set(by_name_h):
        fb, fh = by_name_b.get(name), by_name_h.get(name)
        sb, sh = (fb.self.samples if fb else 0), (fh.self.samples if fh else 0)
        tb, th = (fb.total.samples if fb else 0), (fh.total.samples if fh else 0)
        frame_rows.append({
            "frame": name, "display": st.display_name(name), "layer": (fh or fb).layer,
            "base_self_us_per_call": base.us(sb), "head_self_us_per_call": head.us(sh),
            "base_total_us_per_call": base.us(tb), "head_total_us_per_call": head.us(th),
            "delta_us_per_call": head.us(sh) - base.us(sb),
            "delta_total_us_per_call": head.us(th) - base.us(tb),
            "delta_se_us": _delta_se(base, head, sb, sh),
            "delta_total_se_us": _delta_se(base, head, tb, th),
        })
    frame_rows.sort(key=lambda r: (-abs(r["delta_us_per_call"]), -abs(r["delta_total_us_per_call"]), r["frame"]))

    return {
        "base": base.label,
        "head": head.label,
        "base_us_per_call": base.us_per_call,
        "head_us_per_call": head.us_per_call,
        "delta_us_per_call": head.us_per_call - base.us_per_call,
        "ratio": head.us_per_call / base.us_per_call if base.us_per_call else None,
        "layers": layer_rows,
        "frames": frame_rows,
        "flamegraph": flamegraph(base, head, flame_threshold),
    }


def flamegraph(base: Profile, head: Profile, threshold: float | None = None) -> dict:
    """Nodes of the merged tree, parents before children: the data for a differential flame graph.

    With a threshold, only the nodes flame.diff_graph draws at it are listed (a node under it on both
    sides, and everything below such a node, is not), with the count and time of those left out and the
    root's totals, as diff_graph would find them from every node: the report's graph without the millions of
    nodes a large profile has. Computed from the stacks sorted (st.SortedStacks), not from merged_tree."""
    layer_of = {**frame_layers(base)[0], **frame_layers(head)[0]}
    if threshold is not None:
        return _pruned_flamegraph(base, head, layer_of, threshold)
    nodes: list[dict] = []

    def walk(node: Node, parent: int | None, depth: int) -> None:
        for child in sorted(node.children.values(), key=lambda n: n.name):
            idx = len(nodes)
            (tb, th), (sb, sh) = child.total_n, child.self_n
            nodes.append({
                "id": idx, "parent": parent, "depth": depth, "frame": child.name,
                "layer": layer_of.get(child.name, ly.OTHER),
                "base_total_us_per_call": base.us(tb), "head_total_us_per_call": head.us(th),
                "base_self_us_per_call": base.us(sb), "head_self_us_per_call": head.us(sh),
                "delta_us_per_call": head.us(th) - base.us(tb),
                "delta_self_us_per_call": head.us(sh) - base.us(sb),
            })
            walk(child, idx, depth + 1)

    walk(merged_tree(base, head), None, 0)
    return {
        "width_from": "head",
        "colour_from": "delta_self_us_per_call (head - base): red where head spends more, blue where less",
        "nodes": nodes,
    }


def _pruned_flamegraph(base: Profile, head: Profile, layer_of: dict[str, str], threshold: float) -> dict:
    view = st.SortedStacks([base.stacks, head.stacks])
    tops = list(view.children(0, 0, len(view)))
    head_root = sum(head.us(view.total(1, i, j)) for _, i, j in tops)
    base_root = sum(base.us(view.total(0, i, j)) for _, i, j in tops)
    floor_h, floor_b = threshold * head_root, threshold * base_root
    nodes: list[dict] = []
    pruned = {"nodes": 0, "us": 0.0}

    def walk(children, parent: int | None, depth: int) -> None:
        for name, i, j in children:
            tb, th = view.total(0, i, j), view.total(1, i, j)
            bt, ht = base.us(tb), head.us(th)
            if (ht < floor_h or ht == 0) and (bt < floor_b or bt == 0):
                pruned["nodes"] += view.nodes(depth + 1, i, j)
                pruned["us"] += max(ht, bt)
                continue
            idx = len(nodes)
            sb, sh = view.own(0, depth + 1, i, j), view.own(1, depth + 1, i, j)
            nodes.append({
                "id": idx, "parent": parent, "depth": depth, "frame": name,
                "layer": layer_of.get(name, ly.OTHER),
                "base_total_us_per_call": bt, "head_total_us_per_call": ht,
                "base_self_us_per_call": base.us(sb), "head_self_us_per_call": head.us(sh),
                "delta_us_per_call": ht - bt,
                "delta_self_us_per_call": head.us(sh) - base.us(sb),
            })
            walk(view.children(depth + 1, i, j), idx, depth + 1)

    walk(tops, None, 0)
    return {
        "width_from": "head",
        "colour_from": "delta_self_us_per_call (head - base): red where head spends more, blue where less",
        "nodes": nodes,
        "threshold": threshold, "pruned_nodes": pruned["nodes"], "pruned_us": pruned["us"],
        "head_total_us": head_root, "base_total_us": base_root,
    }


def slower_by_pct(d: dict) -> float | None:
    return (d["ratio"] - 1) * 100 if d.get("ratio") is not None else None
