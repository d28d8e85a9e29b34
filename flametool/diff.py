"""Differences between two profiles (two cases of a run, or one case in two runs), on a merged call tree.

Frames are matched by normalized name, so the shared part of two stacks (cuBLAS, the driver, libc) lines
up under the same path and a difference shows where it really is. The top frame of every stack is the
case's own step() function, which has a different name in every case; it is matched as STEP_ROOT.

The merged call tree of both sides' aligned stacks is what the differential flame graph is drawn from (see
flamegraph.diff_graph, which makes it as arrays, trie.build); diff(with_tree=True) also gives it as tree.Node
objects, for callers that walk it.
"""

from __future__ import annotations

import math
from . import layers as ly
from . import folded
from . import naming
from . import tree
from .attribution import Profile, attribute, layer_label

STEP_ROOT = "step()"


def aligned(profile: Profile) -> list[folded.Stack]:
    """Stacks with the case's step() frame, the root of each kept stack, renamed STEP_ROOT (merged, in
    first-seen order)."""
    kind = {key: f.kind for key, f in profile.frames.items()}
    address = {key for key, k in kind.items() if k == "address"}
    counts: dict[tuple[str, ...], int] = {}
    get = counts.get
    for s in profile.stacks:
        frames = s.frames
        if frames[0] in address:
            # py-spy now and then puts an unnamed address above step() (a trampoline or an unwinding slip);
            # when a named frame follows, the stack is aligned at that one
            frames = frames[next((i for i, n in enumerate(frames) if n not in address), 0):]
        first = kind[frames[0]]
        if first == "python":
            frames = (STEP_ROOT,) + frames[1:]
        elif first != "loop":  # step is itself a native callable (step = np.matmul): it sits under STEP_ROOT
            frames = (STEP_ROOT,) + frames
        counts[frames] = get(frames, 0) + s.count
    return [folded.Stack(f, c) for f, c in counts.items()]


def aligned_profile(profile: Profile) -> Profile:
    """The profile with its stacks aligned; made once per profile (a diff in each view of the layers needs it,
    and it carries what is derived from it, its layers and call tree, along)."""
    if profile.aligned is None:
        frames = dict(profile.frames)
        frames[STEP_ROOT] = naming.Frame(STEP_ROOT, "", "python")
        profile.aligned = Profile(profile.label, aligned(profile), frames, profile.us_per_call, profile.recorded_samples)
    return profile.aligned


def _delta_se(base: Profile, head: Profile, nb: int, nh: int) -> float:
    return math.hypot(base.se(nb), head.se(nh))


def diff(base: Profile, head: Profile, view: str = ly.DEFAULT_VIEW, with_tree: bool = False) -> dict:
    """Layers and frames, head minus base, and the aligned profiles the differential flame graph is drawn
    from. with_tree: also the merged call tree as tree.Node objects, for a caller that walks it (the tests
    check the array-built graphs against it); nothing in flametool needs it, and on a large profile it is
    the costliest part."""
    # layers: each case's own figures, as every layer table shows them, so a row's delta is head - base of the
    # figures beside it (the aligned stacks charge some system-library samples to the step() they put on top)
    lb, lh = attribute(base, view), attribute(head, view)
    base, head = aligned_profile(base), aligned_profile(head)
    cb, ch = attribute(base, view), attribute(head, view)

    layer_rows = []
    for layer in ly.order(set(lb.layers) | set(lh.layers)):
        fb, fh = lb.layers.get(layer), lh.layers.get(layer)
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
            "frame": name, "display": naming.display_name(name), "layer": (fh or fb).layer,
            "layer_label": layer_label(list(dict.fromkeys((fh.charged if fh else []) + (fb.charged if fb else [])))
                                       or [(fh or fb).layer]),
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
        # the merged call tree as nodes (not JSON: tree.Node, for callers that walk it), the aligned profiles
        # the differential flame graph is drawn from (flamegraph.diff_graph), and what one sample of each side is
        # worth in us per call
        "tree": tree.build([base, head]) if with_tree else None,
        "aligned": (base, head),
        "us_per_sample": [base.us(1), head.us(1)],
    }
