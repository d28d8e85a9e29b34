"""Layers: which part of the software stack a frame belongs to, by rules kept as data in layers.json."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import signal
import threading
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from ..errors import FlametoolError
from .naming import Frame
from .views import DEFAULT_VIEW  # views.py says what the views are

INHERIT = "inherit"
OTHER = "other"


@dataclass(frozen=True)
class Rule:
    layer: str
    name: re.Pattern | None = None
    file: re.Pattern | None = None
    kind: str | None = None

    def matches(self, frame: Frame) -> bool:
        return ((self.kind is None or frame.kind == self.kind)
                and (self.name is None or bool(self.name.search(frame.name)))
                and (self.file is None or bool(self.file.search(frame.file))))


RULES_ENV = "FLAMETOOL_LAYERS"  # a layers.json of one's own, to try other rules on existing runs


def read_rules(text: str | None = None) -> tuple[list[Rule], dict[str, str]]:
    """The rules and the layers (name -> what it holds, in display order) from `text`, or from the file
    $FLAMETOOL_LAYERS names, or the layers.json shipped with flametool (a bad file: one FlametoolError)."""
    return _load_all(text)[:2]


def _load_all(text: str | None = None) -> tuple[list[Rule], dict[str, str], frozenset[str], dict[str, str]]:
    if text is not None:
        return _parse(json.loads(text))
    path = os.environ.get(RULES_ENV)
    global _user_rules
    _user_rules = path or None
    try:
        text = (Path(path).read_text(encoding="utf-8") if path
                else resources.files(__package__).joinpath("layers.json").read_text(encoding="utf-8"))
    except OSError as exc:
        raise FlametoolError(f"{RULES_ENV}={path}: cannot be read ({exc.strerror or exc})") from None
    try:
        return _parse(json.loads(text))
    except (ValueError, KeyError, TypeError, re.error) as exc:
        raise FlametoolError(f"{path or 'layers.json'}: not a layers file ({type(exc).__name__}: {exc})") from None


def _parse(data: dict) -> tuple[list[Rule], dict[str, str], frozenset[str], dict[str, str]]:
    """(rules, layer -> what it holds, the layers charged to their caller, layer -> its name on the CPU)."""
    layers = {entry["layer"]: entry["about"] for entry in data["layers"]}
    on_cpu = {entry["layer"]: str(entry["on_cpu"]) for entry in data["layers"] if entry.get("on_cpu")}
    charged_layers = frozenset(entry["layer"] for entry in data["layers"] if entry.get("charge_to_caller") is True)
    rules = []
    for entry in data["rules"]:
        if entry["layer"] not in layers and entry["layer"] != INHERIT:
            raise ValueError(f"layers.json: rule {entry} names an unlisted layer")
        rules.append(Rule(layer=entry["layer"], kind=entry.get("kind"),
                          name=re.compile(entry["name"]) if "name" in entry else None,
                          file=re.compile(entry["file"]) if "file" in entry else None))
    return rules, layers, charged_layers, on_cpu


@functools.lru_cache(maxsize=None)
def current() -> tuple[list[Rule], dict[str, str], frozenset[str], dict[str, str]]:
    """The rules in force, read once, when first needed (so a bad $FLAMETOOL_LAYERS is one error line)."""
    return _load_all()


def charged() -> frozenset[str]:
    """Layers charged to their caller in the 'caller' view (layers.json: charge_to_caller)."""
    return current()[2]


def about() -> dict[str, str]:
    """Layer name -> what it holds, in display order."""
    return current()[1]


def names_on(device: str | None) -> dict[str, str]:
    """Layer -> the name it goes by on this device, where that differs (layers.json: on_cpu): a CPU run has no
    CUDA, so its 'ATen/CUDA glue' is 'ATen glue'."""
    return dict(current()[3]) if device == "cpu" else {}


def canonical(layer: str) -> str:
    """The layer's name in layers.json of a name it goes by on some device (names_on), for its colour and order."""
    return next((l for l, n in current()[3].items() if n == layer), layer)


def classify(frame: Frame, rules: list[Rule] | None = None) -> str:
    """The frame's own layer; may be INHERIT (its caller's layer decides)."""
    if rules is None:
        rules = current()[0]
        if _user_rules and _can_bound():
            with _alarm():
                return _bounded(frame, rules)
    return next((r.layer for r in rules if r.matches(frame)), OTHER)


# Rules of one's own ($FLAMETOOL_LAYERS) are tried on a frame for at most this long. A backtracking pattern
# can take exponential time (`(a+)+$` on a frame of 40 'a's: days); a time bound catches every such pattern,
# however it is built (nested repetition, overlapping alternatives, back-references), where a check of its
# form would miss some and refuse safe ones. CPython's matcher looks for signals while it backtracks, so
# SIGALRM stops it. A frame takes microseconds against a whole rule set; a second is far beyond any rule
# meant to match.
MATCH_SECONDS = 1.0
_user_rules: str | None = None  # the file $FLAMETOOL_LAYERS named, when its rules are the ones in force


class _Timeout(Exception):
    pass


def _can_bound() -> bool:
    return hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def _alarm():
    def ring(signum, frame):
        raise _Timeout

    previous = signal.signal(signal.SIGALRM, ring)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _bounded(frame: Frame, rules: list[Rule]) -> str:
    """classify() with the rules tried for at most MATCH_SECONDS (under _alarm); a rule that takes longer is
    one FlametoolError naming it and the frame."""
    i = 0
    signal.setitimer(signal.ITIMER_REAL, MATCH_SECONDS)
    try:
        for i, rule in enumerate(rules):
            if rule.matches(frame):
                return rule.layer
        return OTHER
    except _Timeout:
        rule = rules[i]
        pattern = " ".join(f"{k} {p.pattern!r}" for k, p in (("name", rule.name), ("file", rule.file)) if p)
        raise FlametoolError(
            f"{RULES_ENV}={_user_rules}: rule {i + 1} ({pattern[:120]}) took more than {MATCH_SECONDS:g} s on the frame "
            f"{frame.name[:80]!r}: a pattern with nested or overlapping repetition such as (a+)+ can take exponential "
            "time; rewrite it (an atomic group (?>a+)+ or a possessive a++ cannot backtrack)") from None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def stack_layers(names: tuple[str, ...], frames: dict[str, Frame], rules: list[Rule] | None = None,
                 view: str = DEFAULT_VIEW) -> list[str]:
    """The layer of each frame of one stack, root first, with INHERIT resolved from the caller."""
    return resolve(names, {name: classify(frames[name], rules) for name in set(names)}, view)


def own_layers(frames: dict[str, Frame], rules: list[Rule] | None = None) -> dict[str, str]:
    """Each frame's own layer (may be INHERIT), classified once per frame: what a profile of millions of
    stacks looks up instead of trying the rules on every frame of every stack."""
    if rules is None and current() and _user_rules and _can_bound():
        with _alarm():  # one handler for them all; each frame's rules bounded in time
            rules = current()[0]
            return {name: _bounded(frame, rules) for name, frame in frames.items()}
    if rules is not None:
        return {name: classify(frame, rules) for name, frame in frames.items()}
    global _classified
    if _classified[0] is not current()[0]:  # other rules in force (read again): what was classified is not theirs
        _classified = (current()[0], {})
    known = _classified[1]
    out = {}
    for name, frame in frames.items():
        layer = known.get(frame)
        if layer is None:
            layer = known[frame] = classify(frame)
        out[name] = layer
    return out


# Each frame's own layer under the rules in force, kept while they are: a frame's layer is its rules' alone, and a
# profile, its aligned stacks and the other cases of a run (an atlas's ops) share most frames.
_classified: tuple[list[Rule] | None, dict[Frame, str]] = (None, {})


def resolve(names: tuple[str, ...], own: dict[str, str], view: str = DEFAULT_VIEW) -> list[str]:
    """stack_layers with the frames' own layers given: INHERIT takes the resolved layer of the caller (OTHER
    at the root); in the 'caller' view, so does a layer charged to its caller (a system library), unless it
    is the root. The common case, no INHERIT in the stack, is one C-level map."""
    out = list(map(own.__getitem__, names))
    if INHERIT in out:
        i = out.index(INHERIT)
        while True:
            out[i] = out[i - 1] if i else OTHER
            try:
                i = out.index(INHERIT, i + 1)
            except ValueError:
                break
    charged_layers = charged()
    if view == "caller" and not charged_layers.isdisjoint(out):
        for i in range(1, len(out)):
            if out[i] in charged_layers:
                out[i] = out[i - 1]
    return out


def order(layer_names) -> list[str]:
    """Layers in the order layers.json lists them (unknown ones last, by name)."""
    known = list(about())
    return sorted(layer_names, key=lambda l: (known.index(canonical(l)) if canonical(l) in known else len(known), l))
