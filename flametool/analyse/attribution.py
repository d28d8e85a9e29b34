"""Sample shares -> microseconds per call, with an uncertainty per figure and a closure check.

How a figure is made: py-spy's samples say *where* the loop spends its time, the unsampled timed loops
say *how much* (py-spy stops the process to sample it, so time measured while sampled is inflated, but
every part of a call is inflated alike and shares stay fair). A frame's time per call is therefore

    (its samples / samples inside the active loop) x the case's paired CPU time per call at the sampled shape

where the paired time is the median of the case's timed loops in every timing process (shared with the
other cases). A process's own speed multiplies every part of a call alike, so shares taken in the one
sampled process scale to the pooled time; the sampled process's own unsampled time is kept as a check
(profiled.ProfileProcess.own).

"Samples inside the active loop" are the kept stacks (inside step()) plus ``sampling.loop_samples`` (in
the loop's own bytecode between calls), because the timed figure covers both. The loop's share appears as
its own frame, LOOP_FRAME, in the layer 'loop', so nothing is spread over step()'s frames that step() did
not spend. Samples outside the loop (sync, chunk timing) are in neither and are left out.

Uncertainty: a share p of N samples has the binomial standard error sqrt(p(1-p)/N); the figure's is that
times the time per call. The timed figure's own spread (the repeats) is not folded in.

Closure: the layers are summed from the per-frame figures and compared with the measured time per call.
Shares are taken of the samples the sampler *recorded* in run.json (``samples`` + ``loop_samples``), not
of those found in the .folded file, so the ratio is 1 exactly when every recorded sample was read, named,
layered and counted once, and falls short when stacks went missing between the sampler and the analysis
(a truncated or edited .folded file). It is a consistency check; it cannot see a bias in py-spy's
sampling itself (the sampled-loop slowdown in run.json is the figure for that).
"""

from __future__ import annotations

import functools
import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import calltree, layers as ly, naming, reading, views
from ..run import folded, rundir, stats
from ..errors import RunDirError
from ..run.record import CaseResult, Run

CLOSURE_TOLERANCE = 0.10


@dataclass
class Profile:
    """One case's stacks, named for people and ready to be scaled to microseconds per call."""

    label: str
    stacks: list[folded.Stack]  # normalized names, root first; the loop's own samples as [LOOP_FRAME]
    frames: dict[str, naming.Frame]
    us_per_call: float  # unsampled CPU time per call at the sampled shape
    recorded_samples: int | None = None  # what the sampler says it kept, loop included (None: trust the stacks)
    repaired_samples: int = 0  # samples whose stack had a misplaced inlined header chain (naming.repair_sandwiches)
    names: dict[str, str] = field(default_factory=dict)  # layer -> its name on this run's device (ly.names_on)
    # derived once and reused (attribution, the diff and the flame graphs all need them); stacks and frames
    # are not changed after a Profile is made
    _layers: dict[str, list[tuple[str, ...]]] = field(default_factory=dict, init=False, repr=False, compare=False)
    _call_tree: "calltree.CallTree | None" = field(default=None, init=False, repr=False, compare=False)
    _node_layers: dict[str, tuple[list[str], list]] = field(default_factory=dict, init=False, repr=False, compare=False)
    _total_counts: dict[str, int] | None = field(default=None, init=False, repr=False, compare=False)
    _charges: dict[str, dict[str, list[str]]] = field(default_factory=dict, init=False, repr=False, compare=False)
    _costs: dict[str, "CaseCosts"] = field(default_factory=dict, init=False, repr=False, compare=False)  # by view
    _own_layers: dict[str, str] | None = field(default=None, init=False, repr=False, compare=False)
    # made by the analysis beside the figures: the profile with its stacks aligned (treediff.aligned_profile) and
    # its flame graph, (threshold, graph and its strings) (flamegraph.prepare_case_graph)
    aligned: "Profile | None" = field(default=None, init=False, repr=False, compare=False)
    flame_graph: tuple | None = field(default=None, init=False, repr=False, compare=False)

    @functools.cached_property
    def samples(self) -> int:
        return sum(s.count for s in self.stacks)

    def stack_layers(self, view: str = views.DEFAULT_VIEW) -> list[tuple[str, ...]]:
        """The resolved layers of every stack (ly.stack_layers) in `view`, each frame classified once; equal
        layer sequences share one tuple."""
        if view not in self._layers:
            own = self._own()
            shared: dict[tuple[str, ...], tuple[str, ...]] = {}
            self._layers[view] = [shared.setdefault(t, t)
                                  for t in (tuple(ly.resolve(s.frames, own, view)) for s in self.stacks)]
        return self._layers[view]

    def call_tree(self) -> calltree.CallTree:
        """The call tree of the stacks, as arrays (calltree.build), made once."""
        if self._call_tree is None:
            self._call_tree = calltree.build([self.stacks])
        return self._call_tree

    def own_layers(self, names: list[str]) -> list[str]:
        """Each name's own layer (may be INHERIT); OTHER for a name this profile does not have."""
        own = self._own()
        return [own.get(name, ly.OTHER) for name in names]

    def _own(self) -> dict[str, str]:
        """Each frame's own layer, by the name it goes by on this run's device; made once (both views read it)."""
        if self._own_layers is None:
            own = ly.own_layers(self.frames)
            self._own_layers = {k: self.names.get(v, v) for k, v in own.items()} if self.names else own
        return self._own_layers

    def node_layers(self, view: str = views.DEFAULT_VIEW) -> tuple[list[str], list]:
        """The resolved layer of every node of call_tree(), in `view` (calltree.node_layers), made once per view."""
        if view not in self._node_layers:
            t = self.call_tree()
            self._node_layers[view] = calltree.node_layers(t, self.own_layers(t.names), ly.INHERIT, ly.OTHER, ly.charged(), view)
        return self._node_layers[view]

    def drop_tree(self) -> None:
        """Forget the call tree and its layers (what attribute() has made from them stays)."""
        self._call_tree = None
        self._node_layers.clear()

    @property
    def denominator(self) -> int:
        return self.recorded_samples or self.samples

    def us(self, count: float) -> float:
        return count * self.us_per_call / self.denominator if self.denominator else 0.0

    def se(self, count: float) -> float:
        n = self.denominator
        if not n:
            return 0.0
        p = count / n
        return math.sqrt(max(p * (1 - p), 0.0) / n) * self.us_per_call


def make_profile(label: str, raw: list[folded.Stack], loop_samples: int, us_per_call: float,
                 by_line: bool = False, recorded_samples: int | None = None) -> Profile:
    usable = [s for s in raw if s.frames and s.count > 0]
    if loop_samples:
        usable.append(folded.Stack((naming.LOOP_FRAME,), loop_samples))
    stacks, frames = naming.normalize(usable, by_line=by_line)
    stacks, repaired = naming.repair_sandwiches(stacks, frames)
    return Profile(label, stacks, frames, us_per_call, recorded_samples, repaired)


def sampled_labels(run: Run) -> list[str]:
    """Cases with stacks to analyse, in run order."""
    return [l for l, r in run.results.items() if skip_reason(r, run) is None]


def why_no_stacks(run: Run) -> str:
    """Why no case of the run has stacks (sampled_labels is empty), in one line: the cases of each reason,
    'numpy, torch: not sampled (--no-sample)', so that an export says why as diff does per case."""
    by_reason: dict[str, list[str]] = {}
    for label, result in run.results.items():
        by_reason.setdefault(skip_reason(result, run) or "has stacks", []).append(label)
    if not by_reason:
        return "the run has no cases"
    # a run of 2,000 cases is named by its count: the line stays one line
    return "; ".join((", ".join(labels) if len(labels) <= 4 else f"{len(labels)} cases") + f": {reason}"
                     for reason, labels in by_reason.items())


def skip_reason(result: CaseResult, run: Run | None = None) -> str | None:
    """Why the case has no stacks to analyse, or None; `run` (its run) says which of the reasons for no stacks
    it was, where run.json knows: --no-sample, or a run stopped before the profile was kept."""
    if result.error:
        return "the case failed"
    if not result.file("folded"):
        if result.profile_error:  # its profiled process failed (killed while py-spy sampled it, say): not --no-sample
            return f"not sampled: {result.profile_error}"
        if run is not None and run.config.recorded.get("sample") is False:
            return "not sampled (the sweep ran without --sample)" if run.kind == "sweep" else "not sampled (--no-sample)"
        if run is not None and not run.complete:
            return "not sampled: the run was stopped before its profile was kept"
        return "not sampled (py-spy did not run)" if run is not None else "not sampled (--no-sample, or py-spy did not run)"
    timing = result.at_sample_shape
    if timing is None or not timing.cpu_us_per_call:
        return "no time per call at the sampled shape"
    if not result.samples:
        return "py-spy kept no samples inside step()"
    return None


def load_profile(run_dir: Path, run: Run, label: str, by_line: bool = False,
                 scale: dict[str, stats.Pooled] | None = None) -> Profile:
    """A case's profile from its run directory, scaled by its paired time per call at the sample shape
    (stats.group_pooled: pooled over its group's processes, the figure every view shows; `scale`: those of the
    run, made once by the caller, None: made here); any problem is a RunDirError naming it."""
    result = run.results.get(label)
    if result is None:
        raise RunDirError(f"{run_dir}: no case {label!r} (cases: {', '.join(run.results) or 'none'})")
    pooled = (scale if scale is not None else stats.group_pooled(run, True, intervals=False)).get(label)
    return profile_of(run_dir, result, label, by_line, pooled.us if pooled else None, run)


def threads_profile(run_dir: Path, result: CaseResult, label: str, us_per_call: float) -> Profile | None:
    """The stacks of the case's threads other than the caller (LABEL.threads.folded, py-spy --threads) during
    the sampled loop, scaled to `us_per_call`: the CPU time per call on those threads. None where the case has
    none (not sampled, a run recorded before, or no other thread ran)."""
    name = result.file("threads")
    if name is None or skip_reason(result):
        return None
    if not rundir.is_file_name(name):
        raise RunDirError(f"{run_dir / rundir.RUN_FILE}: case {label!r}: files.threads is not a file name in the run directory")
    stacks, frames = reading.read_normalized(run_dir / name)
    profile = Profile(f"{label}: other threads", stacks, frames, float(us_per_call))
    return profile if profile.samples else None


def profile_of(run_dir: Path, result: CaseResult, label: str, by_line: bool = False,
               us_per_call: float | None = None, run: Run | None = None) -> Profile:
    """load_profile of one result (a sweep's point is read as a result of its own: scaled by the median of
    its loops unless `us_per_call` is given); `run`, where given, says which reason a case without stacks has
    (skip_reason: --no-sample, rather than '--no-sample, or py-spy did not run')."""
    reason = skip_reason(result, run)
    if reason:
        raise RunDirError(f"{run_dir}: case {label!r} cannot be analysed: {reason}")
    # what skip_reason found: the case was sampled, and has a time per call at the sampled shape
    assert result.sampling is not None and result.at_sample_shape is not None
    assert result.at_sample_shape.cpu_us_per_call is not None
    name = result.file("folded")
    if not rundir.is_file_name(name):
        raise RunDirError(f"{run_dir / rundir.RUN_FILE}: case {label!r}: files.folded is not a file name in the run directory")
    loop = result.sampling.loop_samples
    # as make_profile does, streamed: the raw stacks of a large profile are never all in memory
    stacks, frames = reading.read_normalized(run_dir / name, by_line, [folded.Stack((naming.LOOP_FRAME,), loop)] if loop else [])
    stacks, repaired = naming.repair_sandwiches(stacks, frames)
    us = us_per_call if us_per_call is not None else result.at_sample_shape.cpu_us_per_call
    profile = Profile(label, stacks, frames, float(us), result.sampling.analysed_samples, repaired,
                      ly.names_on(result.device))
    if not profile.samples:
        raise RunDirError(f"{run_dir / name}: no samples")
    return profile


@dataclass
class Figure:
    us_per_call: float
    se_us: float
    samples: int


@dataclass
class FrameCost:
    frame: str
    layer: str  # where most of its own samples went (its colour)
    self: Figure
    total: Figure
    charged: list[str] = field(default_factory=list)  # every layer its own samples went to, most first

    @property
    def display(self) -> str:
        """The name as tables show it (long C++ names shortened)."""
        return naming.display_name(self.frame)

    @property
    def layer_label(self) -> str:
        """Its layer, or "several: ..." where its own samples went to more than one."""
        return layer_label(self.charged or [self.layer])


@dataclass(frozen=True)
class Closure:
    """Do the layers add up to the measured time per call? (See the module's docstring.)"""

    measured_us_per_call: float
    layers_sum_us_per_call: float
    samples_read: int
    samples_recorded: int
    ratio: float | None
    tolerance: float = CLOSURE_TOLERANCE
    within_tolerance: bool = field(init=False)  # the ratio is within `tolerance` of 1

    def __post_init__(self) -> None:
        object.__setattr__(self, "within_tolerance", self.ratio is not None and abs(self.ratio - 1) <= self.tolerance)


@dataclass
class CaseCosts:
    label: str
    us_per_call: float
    samples: int
    recorded: int
    loop_samples: int
    layers: dict[str, Figure]
    frames: list[FrameCost]  # every frame, by self time, largest first
    called_from: dict[str, dict[str, float]] = field(default_factory=dict)
    repaired_samples: int = 0
    # do the layers add up to the measured time? Made with the figures, so that a view reads it rather than asks
    closure: Closure = field(init=False)

    def __post_init__(self) -> None:
        total = sum(f.us_per_call for f in self.layers.values())
        self.closure = Closure(self.us_per_call, total, self.samples, self.recorded,
                               total / self.us_per_call if self.us_per_call else None)


@dataclass(frozen=True)
class Skipped:
    """A case with no stack analysis (failed, not sampled, py-spy found no stacks), and why."""

    reason: str


def _sums(index: np.ndarray, values: np.ndarray, n: int) -> list[int]:
    """Sum of the (non-negative, integer) values per index 0..n-1, exactly: as float64 while that is exact."""
    if values.dtype != object and (not len(values) or int(values.sum()) < calltree.EXACT_FLOAT):
        return [int(x) for x in np.bincount(index, weights=values.astype(np.float64), minlength=n)]
    out = [0] * n
    for i, v in zip(index.tolist(), values.tolist()):
        out[i] += v
    return out


@dataclass
class _Nodes:
    """Every node of a profile's call tree (Profile.call_tree) as flat arrays, with its layer in one view."""

    frame: np.ndarray
    total: np.ndarray
    self: np.ndarray
    first_end: np.ndarray
    layer: np.ndarray
    caller: np.ndarray  # the nearest layer above the node that is not its own (-1: none)
    layer_names: list[str]


def _nodes(profile: Profile, view: str) -> _Nodes:
    t = profile.call_tree()
    layer_names, per_depth = profile.node_layers(view)
    callers, above = [], None
    for depth, level in enumerate(t.levels):
        mine = per_depth[depth]
        if depth == 0:
            caller = np.full(len(mine), -1, dtype=np.int64)
        else:
            assert above is not None  # the level above set it
            parent_layer = per_depth[depth - 1][level.parent]
            caller = np.where(parent_layer != mine, parent_layer, above[level.parent])
        callers.append(caller)
        above = caller
    return _Nodes(calltree.concat(t, "frame"), calltree.concat(t, "total", 0), calltree.concat(t, "self", 0),
                  calltree.concat(t, "first_end"), np.concatenate(per_depth) if per_depth else np.zeros(0, dtype=np.int64),
                  np.concatenate(callers) if callers else np.zeros(0, dtype=np.int64), layer_names)


def total_counts(profile: Profile) -> dict[str, int]:
    """Samples per frame, in its own code or below it: each stack counts once for every frame in it, however
    often a frame recurs in it. The sum of the frame's nodes' totals, less the repeats of the few stacks that
    hold a frame twice (a recursion, A;B;A). Made once per profile (it does not depend on the view)."""
    if profile._total_counts is None:
        t = profile.call_tree()
        sums = _sums(calltree.concat(t, "frame"), calltree.concat(t, "total", 0), len(t.names))
        total = dict(zip(t.names, sums))
        frames = [s.frames for s in profile.stacks]
        for i in [i for i, (a, b) in enumerate(zip(map(len, map(set, frames)), map(len, frames))) if a != b]:
            for name, n in Counter(frames[i]).items():
                total[name] -= (n - 1) * profile.stacks[i].count
        profile._total_counts = total
    return profile._total_counts


def frame_layers(profile: Profile, view: str = views.DEFAULT_VIEW) -> dict[str, str]:
    """Each frame's layer in `view`: where its own samples went, the most of them (a tie: the layer of the
    first stack that ends there); a frame with no samples of its own (a caller only) takes the layer it is
    first seen in (the first stack that holds it, the first place in it). Inherited layers can differ by
    caller, so one frame can end stacks in several layers."""
    t = profile.call_tree()
    nodes = _nodes(profile, view)
    out: dict[str, str] = {}
    # first seen: the node of the frame with the earliest first stack, then the least depth
    order = np.lexsort((calltree.depths(t), calltree.concat(t, "first_row")))
    frames_in_order = nodes.frame[order]
    seen, at = np.unique(frames_in_order, return_index=True)
    for f, i in zip(seen.tolist(), order[at].tolist()):
        out[t.names[f]] = nodes.layer_names[nodes.layer[i]]
    for frame, charged in frame_charges(profile, view).items():
        out[frame] = charged[0]
    return out


def frame_charges(profile: Profile, view: str = views.DEFAULT_VIEW) -> dict[str, list[str]]:
    """Each frame that ends stacks: the layers its own samples were charged to in `view`, most samples first (a
    tie: the layer of the first stack that ends there). A system library called from several layers (libc
    under Python and under cuBLAS) has several: one label would say its time is one layer's."""
    if view in profile._charges:
        return profile._charges[view]
    t = profile.call_tree()
    nodes = _nodes(profile, view)
    width = len(nodes.layer_names)
    ending = nodes.first_end >= 0
    found: dict[int, list[tuple[int, int, int]]] = {}
    if ending.any():
        pairs, inv = np.unique(nodes.frame[ending].astype(np.int64) * width + nodes.layer[ending], return_inverse=True)
        inv = inv.reshape(-1)
        weight = _sums(inv, nodes.self[ending], len(pairs))
        first = np.full(len(pairs), np.iinfo(np.int64).max, dtype=np.int64)
        np.minimum.at(first, inv, nodes.first_end[ending])
        for key_, w, f in zip(pairs.tolist(), weight, first.tolist()):
            frame, layer = divmod(key_, width)
            found.setdefault(frame, []).append((-w, f, layer))
    out = {t.names[frame]: [nodes.layer_names[layer] for _, _, layer in sorted(charged)]
           for frame, charged in found.items()}
    profile._charges[view] = out
    return out


def layer_label(charged: list[str]) -> str:
    """A frame's layer as a table shows it: its one layer, or the layers it was charged to."""
    return charged[0] if len(charged) == 1 else f"several: {', '.join(charged)}"


def attribute(profile: Profile, view: str = views.DEFAULT_VIEW) -> CaseCosts:
    """A case's time per call by layer and by frame, in `view`, from its call tree (every node's counts and
    layer; each distinct path is one node, however many stacks go through it). Made once per view: the
    case tables and every diff the profile is in read the same figures."""
    if view not in profile._costs:
        profile._costs[view] = _attribute(profile, view)
    return profile._costs[view]


def _attribute(profile: Profile, view: str) -> CaseCosts:
    t = profile.call_tree()
    nodes = _nodes(profile, view)
    layer_of = frame_layers(profile, view)
    total_n = total_counts(profile)
    ending = np.flatnonzero(nodes.first_end >= 0)
    self_n = dict(zip(t.names, _sums(nodes.frame[ending], nodes.self[ending], len(t.names))))
    width = len(nodes.layer_names)
    leaf_layers = nodes.layer[ending]
    layer_sums = _sums(leaf_layers, nodes.self[ending], width)
    layer_n = {nodes.layer_names[l]: layer_sums[l] for l in np.unique(leaf_layers).tolist()}
    # the layers that called each leaf layer, in the order stacks first show them (as a Counter fed stack by
    # stack keeps them): per (leaf layer, caller), the samples and the first stack
    called = ending[nodes.caller[ending] >= 0]
    callers: dict[str, list[tuple[int, int, str]]] = {}
    if len(called):
        pairs, inv = np.unique(nodes.layer[called] * width + nodes.caller[called], return_inverse=True)
        inv = inv.reshape(-1)
        weight = _sums(inv, nodes.self[called], len(pairs))
        first = np.full(len(pairs), np.iinfo(np.int64).max, dtype=np.int64)
        np.minimum.at(first, inv, nodes.first_end[called])
        for f, key, w in sorted(zip(first.tolist(), pairs.tolist(), weight)):
            leaf, caller = divmod(key, width)
            callers.setdefault(nodes.layer_names[leaf], []).append((w, f, nodes.layer_names[caller]))

    def fig(n: int) -> Figure:
        return Figure(profile.us(n), profile.se(n), n)

    charges = frame_charges(profile, view)
    frames = [FrameCost(name, layer_of[name], fig(self_n[name]), fig(total_n[name]), charges.get(name, []))
              for name in t.names]
    frames.sort(key=lambda f: (-f.self.samples, -f.total.samples, f.frame))
    return CaseCosts(
        label=profile.label,
        us_per_call=profile.us_per_call,
        samples=profile.samples,
        recorded=profile.denominator,
        loop_samples=total_n.get(naming.LOOP_FRAME, 0),
        layers={l: fig(layer_n[l]) for l in ly.order(layer_n)},
        frames=frames,
        # most samples first; a tie in the order first seen (Counter.most_common's order)
        called_from={l: {c: profile.us(n) for n, _, c in sorted(cs, key=lambda x: (-x[0], x[1]))} for l, cs in callers.items()},
        repaired_samples=profile.repaired_samples,
    )
