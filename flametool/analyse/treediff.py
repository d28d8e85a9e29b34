"""Differences between two profiles (two cases of a run, or one case in two runs), on a merged call tree.

Frames are matched by normalized name, so the shared part of two stacks (cuBLAS, the driver, libc) lines
up under the same path and a difference shows where it really is. The top frame of every stack is the
case's own step() function, which has a different name in every case; it is matched as STEP_ROOT.

The merged call tree of both sides' aligned stacks is what the differential flame graph is drawn from (see
flamegraph.diff_graph, which makes it as arrays, calltree.build); diff(with_tree=True) also gives it as nodetree.Node
objects, for callers that walk it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from . import layers as ly, naming, nodetree, roles as rl, views
from ..run import folded
from .attribution import FrameCost, Profile, attribute, layer_label

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
        profile.aligned = Profile(profile.label, aligned(profile), frames, profile.us_per_call, profile.recorded_samples,
                                  names=profile.names)
    return profile.aligned


def _delta_se(base: Profile, head: Profile, nb: int, nh: int) -> float:
    return math.hypot(base.se(nb), head.se(nh))


@dataclass(frozen=True)
class LayerDelta:
    """A layer in both cases, each case's own figure (as its layer table shows it), head - base."""

    layer: str
    base_us_per_call: float
    head_us_per_call: float
    delta_us_per_call: float
    delta_se_us: float


@dataclass(frozen=True)
class FrameDelta:
    """A frame of the merged call tree: own (self) and total time per call in each case, head - base."""

    frame: str
    display: str
    layer: str
    layer_label: str
    base_self_us_per_call: float
    head_self_us_per_call: float
    base_total_us_per_call: float
    head_total_us_per_call: float
    delta_us_per_call: float
    delta_total_us_per_call: float
    delta_se_us: float
    delta_total_se_us: float
    # a row of frames matched by what they do (roles.json), not by name: the role, and the frames of each side
    role: str | None = None
    members: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())


@dataclass(frozen=True)
class PairDiff:
    """Two profiles compared, head - base: every layer, every frame (largest difference in own time first),
    and the aligned profiles the differential flame graph is drawn from."""

    base: str
    head: str
    base_us_per_call: float
    head_us_per_call: float
    delta_us_per_call: float
    ratio: float | None
    layers: list[LayerDelta]
    frames: list[FrameDelta]
    aligned: tuple[Profile, Profile]  # (base, head), for flamegraph.diff_graph
    us_per_sample: tuple[float, float]  # what one sample of each side is worth, us per call
    tree: nodetree.Node | None = None  # the merged call tree as nodes, with_tree=True only
    at_speed: str | None = None  # how both sides were put at their common speed (compare.at_common_speed), if they were

    def named(self, base: str, head: str) -> "PairDiff":
        """The same figures with the sides named otherwise (a diff of two runs: "base" and "head")."""
        return replace(self, base=base, head=head)


ROLE_NAMES = 2  # the frames a role's row names on each side; more are counted


def _listed(names: list[str]) -> str:
    # the function's name only: the case's label after it says whose library it is
    shown = [naming.display_name(n.rpartition(" (")[0] or n if n.endswith(")") else n, 40) for n in names[:ROLE_NAMES]]
    return " + ".join(shown) + (f" + {len(names) - ROLE_NAMES} more" if len(names) > ROLE_NAMES else "")


def role_rows(base: Profile, head: Profile, by_name_b: dict[str, FrameCost],
              by_name_h: dict[str, FrameCost]) -> tuple[list[FrameDelta], set[str]]:
    """Frames that do one job (roles.json) under a name only one side has, matched as one row per role that
    both sides have such frames of (numpy's sgemm_kernel_HASWELL against torch's
    mkl_blas_def_sgemm_kernel_0_zen: the GEMM kernel); returns the rows and the names they take in. A frame
    both sides have keeps its own row."""
    only_b = [n for n in by_name_b if n not in by_name_h]
    only_h = [n for n in by_name_h if n not in by_name_b]
    of_b: dict[str, list[str]] = {}
    of_h: dict[str, list[str]] = {}
    for names, profile, into in ((only_b, base, of_b), (only_h, head, of_h)):
        for n in names:
            role = rl.role(profile.frames[n]) if n in profile.frames else None
            if role is not None:
                into.setdefault(role, []).append(n)
    rows, taken = [], set()
    for role in (r for r in rl.about() if r in of_b and r in of_h):
        mb = sorted(of_b[role], key=lambda n: -by_name_b[n].self.samples)
        mh = sorted(of_h[role], key=lambda n: -by_name_h[n].self.samples)
        sb = sum(by_name_b[n].self.samples for n in mb)
        sh = sum(by_name_h[n].self.samples for n in mh)
        # total: the samples under any of the role's frames, each counted once (one may call another)
        tb = sum(s.count for s in base.stacks if not set(mb).isdisjoint(s.frames))
        th = sum(s.count for s in head.stacks if not set(mh).isdisjoint(s.frames))
        lead = by_name_b[mb[0]] if by_name_b[mb[0]].self.samples >= by_name_h[mh[0]].self.samples else by_name_h[mh[0]]
        charged = list(dict.fromkeys(l for n in mh for l in (by_name_h[n].charged or [by_name_h[n].layer]))
                       | dict.fromkeys(l for n in mb for l in (by_name_b[n].charged or [by_name_b[n].layer])))
        rows.append(FrameDelta(
            f"[{role}]", f"{role}: {_listed(mb)} ({base.label}) ≈ {_listed(mh)} ({head.label})", lead.layer,
            layer_label(charged), base.us(sb), head.us(sh), base.us(tb), head.us(th),
            head.us(sh) - base.us(sb), head.us(th) - base.us(tb),
            _delta_se(base, head, sb, sh), _delta_se(base, head, tb, th), role, (tuple(mb), tuple(mh))))
        taken |= set(mb) | set(mh)
    return rows, taken


def diff(base: Profile, head: Profile, view: str = views.DEFAULT_VIEW, with_tree: bool = False,
         at_speed: str | None = None, by_role: bool = False) -> PairDiff:
    """Layers and frames, head minus base, and the aligned profiles the differential flame graph is drawn
    from. with_tree: also the merged call tree as nodetree.Node objects, for a caller that walks it (the tests
    check the array-built graphs against it); nothing in flametool needs it, and on a large profile it is
    the costliest part. by_role (two libraries): frames that do one job under names only one side has are
    matched by their role first (role_rows), and the remaining frames listed by name."""
    # layers: each case's own figures, as every layer table shows them, so a row's delta is head - base of the
    # figures beside it (the aligned stacks charge some system-library samples to the step() they put on top)
    lb, lh = attribute(base, view), attribute(head, view)
    base, head = aligned_profile(base), aligned_profile(head)
    cb, ch = attribute(base, view), attribute(head, view)

    layer_rows = []
    for layer in ly.order(set(lb.layers) | set(lh.layers)):
        in_b, in_h = lb.layers.get(layer), lh.layers.get(layer)
        b, h = (in_b.us_per_call if in_b else 0.0), (in_h.us_per_call if in_h else 0.0)
        layer_rows.append(LayerDelta(layer, b, h, h - b,
                                     _delta_se(base, head, in_b.samples if in_b else 0, in_h.samples if in_h else 0)))

    by_name_b = {f.frame: f for f in cb.frames}
    by_name_h = {f.frame: f for f in ch.frames}
    frame_rows, taken = role_rows(base, head, by_name_b, by_name_h) if by_role else ([], set())
    for name in (set(by_name_b) | set(by_name_h)) - taken:
        fb, fh = by_name_b.get(name), by_name_h.get(name)
        sb, sh = (fb.self.samples if fb else 0), (fh.self.samples if fh else 0)
        tb, th = (fb.total.samples if fb else 0), (fh.total.samples if fh else 0)
        shown = fh or fb
        assert shown is not None  # name is a frame of one of them
        frame_rows.append(FrameDelta(
            name, naming.display_name(name), shown.layer,
            layer_label(list(dict.fromkeys((fh.charged if fh else []) + (fb.charged if fb else []))) or [shown.layer]),
            base.us(sb), head.us(sh), base.us(tb), head.us(th),
            head.us(sh) - base.us(sb), head.us(th) - base.us(tb),
            _delta_se(base, head, sb, sh), _delta_se(base, head, tb, th)))
    frame_rows.sort(key=lambda r: (-abs(r.delta_us_per_call), -abs(r.delta_total_us_per_call), r.frame))

    return PairDiff(base.label, head.label, base.us_per_call, head.us_per_call, head.us_per_call - base.us_per_call,
                    head.us_per_call / base.us_per_call if base.us_per_call else None, layer_rows, frame_rows,
                    (base, head), (base.us(1), head.us(1)), nodetree.build([base, head]) if with_tree else None,
                    at_speed)
