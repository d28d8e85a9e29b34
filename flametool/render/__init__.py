"""Every output of an analysed run, behind one interface (base.Renderer, generic over the result it renders):
the terminal's tables, the HTML report (of a compare, a sweep, an atlas), speedscope's JSON and folded stacks, and
a summary for CI (text, Markdown, JSON). One renderer per format and kind of result; they share one formatting
module (flametool.render.format)."""

from __future__ import annotations

from ..errors import FlametoolError
from .base import Options, Renderer
from .folded_stacks import FoldedRenderer
from .html import HtmlAtlas, HtmlCompare, HtmlSweep
from .speedscope import SpeedscopeRenderer
from .summary_formats import JsonSummary, MarkdownSummary, TextSummary
from .terminal import TerminalAtlas, TerminalCompare, TerminalDiff, TerminalSweep

ALL: tuple[type[Renderer], ...] = (TerminalCompare, TerminalSweep, TerminalAtlas, TerminalDiff, HtmlCompare, HtmlSweep,
                                   HtmlAtlas, SpeedscopeRenderer, FoldedRenderer, TextSummary, MarkdownSummary,
                                   JsonSummary)
# format -> the kind of result -> its renderer
RENDERERS: dict[str, dict[type, type[Renderer]]] = {}
for _r in ALL:
    RENDERERS.setdefault(_r.name, {})[_r.kind] = _r
EXPORTS = ("speedscope", "folded")  # what `flametool export --format` offers
SUMMARIES = ("text", "markdown", "json")  # what `flametool summary --format` and `diff --format` offer


def check(name: str, choices: tuple[str, ...] = tuple(RENDERERS), option: str = "--format") -> str:
    """The format, if it is one of `choices`; else the one-line error naming them."""
    if name not in choices:
        raise FlametoolError(f"{option} {name!r}: choose from {', '.join(choices)}")
    return name


def show(name: str, result: object, options: Options = Options()) -> str:
    """`result` in format `name`, by the renderer of that format for the result's kind."""
    renderer = RENDERERS[check(name)].get(type(result))
    if renderer is None:
        raise FlametoolError(f"{name}: cannot show a {type(result).__name__}")
    return renderer(options).render(result)
