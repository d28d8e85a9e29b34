"""Every output of an analysed run, behind one interface (base.Renderer): the terminal summary, the HTML
report, speedscope's JSON and folded stacks, and a summary for CI (text, Markdown, JSON). They share one formatting module (flametool.render.format)."""

from __future__ import annotations

from ..errors import FlametoolError
from .base import Renderer
from .folded_stacks import FoldedRenderer
from .html import HtmlRenderer
from .speedscope import SpeedscopeRenderer
from .summary import JsonSummary, MarkdownSummary, TextSummary
from .terminal import TerminalRenderer

RENDERERS: dict[str, type[Renderer]] = {r.name: r for r in (TerminalRenderer, HtmlRenderer, SpeedscopeRenderer,
                                                            FoldedRenderer, TextSummary, MarkdownSummary, JsonSummary)}
EXPORTS = ("speedscope", "folded")  # what `flametool export --format` offers
SUMMARIES = ("text", "markdown", "json")  # what `flametool summary --format` and `diff --format` offer


def get(name: str, choices: tuple[str, ...] = tuple(RENDERERS), option: str = "--format") -> type[Renderer]:
    if name not in choices:
        raise FlametoolError(f"{option} {name!r}: choose from {', '.join(choices)}")
    return RENDERERS[name]
