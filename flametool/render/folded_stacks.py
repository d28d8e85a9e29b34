"""Folded stacks, Brendan Gregg's interchange format: one 'frame;frame;... COUNT' line per stack
(flamegraph.pl, inferno, speedscope read it). Names are normalized; counts stay integers (sample counts),
as flamegraph.pl expects; when more than one case is exported each stack starts with the case's label, so
one file holds them side by side."""

from __future__ import annotations

from ..analyse import attribution
from ..run import folded
from ..analyse.compare import Stacks
from .base import ExportRenderer


def dump(profs: list[attribution.Profile]) -> str:
    prefix = len(profs) > 1
    lines = []
    for p in profs:
        for s in p.stacks:
            names = ((p.label,) if prefix else ()) + s.frames
            lines.append(folded.Stack(tuple(folded.folded_safe(n) for n in names), s.count))
    return folded.dumps(lines)


class FoldedRenderer(ExportRenderer):
    name = "folded"

    def render(self, result: Stacks) -> str:
        return dump(result.profiles)
