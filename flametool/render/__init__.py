"""Every output of an analysed run, behind one interface (base.Renderer, generic over the result it renders):
the terminal's tables, the HTML report (of a compare, a sweep, an atlas), speedscope's JSON and folded stacks, and
a summary for CI (text, Markdown, JSON). One renderer per format and kind of result; they share one formatting
module (flametool.render.format).

The registry is data: each renderer's format, the result it renders, where its class is and what `--help` says
of the format. The command line builds its `--format` choices and help from it without importing a renderer
(html.py imports jinja2, the analyses numpy: `flametool --help` needs neither, issue 42); a renderer's module is
imported when it first renders."""

from __future__ import annotations

import functools
import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import FlametoolError

if TYPE_CHECKING:
    from .base import Options, Renderer


@dataclass(frozen=True)
class Registered:
    """One renderer: `format` (its `name`, --format's word), `result` (the class name of its `kind`), `where`
    ("module.Class" in flametool/render/) and `about` (what --help says of the format; '' for nothing)."""

    format: str
    result: str
    where: str
    about: str = ""


REGISTRY: tuple[Registered, ...] = (
    Registered("terminal", "Analysis", "compare_tables.TerminalCompare"),
    Registered("terminal", "SweepAnalysis", "sweep_tables.TerminalSweep"),
    Registered("terminal", "AtlasAnalysis", "atlas_tables.TerminalAtlas"),
    Registered("terminal", "DiffResult", "diff_tables.TerminalDiff", "the layer and frame tables"),
    Registered("html", "Analysis", "html.HtmlCompare"),
    Registered("html", "SweepAnalysis", "html.HtmlSweep"),
    Registered("html", "AtlasAnalysis", "html.HtmlAtlas"),
    Registered("speedscope", "Stacks", "speedscope.SpeedscopeRenderer", "JSON, weights in us per call"),
    Registered("folded", "Stacks", "folded_stacks.FoldedRenderer", "sample counts"),
    Registered("perfetto", "Timelines", "perfetto.PerfettoRenderer", "one step's CUDA timeline: needs CUPTI"),
    Registered("text", "Summary", "summary_formats.TextSummary"),
    Registered("markdown", "Summary", "summary_formats.MarkdownSummary", "a pull-request comment"),
    Registered("json", "Summary", "summary_formats.JsonSummary", "a versioned schema: docs/summary-json.md"),
)
FORMATS = tuple(dict.fromkeys(r.format for r in REGISTRY))


def formats(result: str) -> tuple[str, ...]:
    """The formats that render a `result` (its class's name): 'Stacks' gives export's, 'Summary' summary's."""
    return tuple(r.format for r in REGISTRY if r.result == result)


EXPORTS = formats("Stacks") + formats("Timelines")  # what `flametool export --format` offers
SUMMARIES = formats("Summary")  # what `flametool summary --format` and `diff --format` offer


def formats_help(result: str, default: str | None = None, leave_out: tuple[str, ...] = ()) -> str:
    """--format's help from the registry: 'speedscope (JSON, weights in us per call) or folded (sample counts)';
    `default` says '(the default)' after its format."""
    words = []
    for r in REGISTRY:
        if r.result == result and r.format not in leave_out:
            about = ", ".join(w for w in (r.about, "the default" if r.format == default else "") if w)
            words.append(f"{r.format} ({about})" if about else r.format)
    return ", ".join(words[:-1]) + " or " + words[-1] if len(words) > 1 else "".join(words)


def about(format: str, result: str) -> str:
    """What --help says of one renderer ('the layer and frame tables' of the terminal's diff)."""
    return next(r.about for r in REGISTRY if r.format == format and r.result == result)


@functools.cache
def renderer_class(where: str) -> type[Renderer]:
    module, _, name = where.rpartition(".")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


def check(name: str, choices: tuple[str, ...] = FORMATS, option: str = "--format") -> str:
    """The format, if it is one of `choices`; else the one-line error naming them."""
    if name not in choices:
        raise FlametoolError(f"{option} {name!r}: choose from {', '.join(choices)}")
    return name


def show(name: str, result: object, options: Options | None = None) -> str:
    """`result` in format `name`, by the renderer of that format for the result's kind."""
    from .base import Options

    check(name)
    renderer = next((c for c in (renderer_class(r.where) for r in REGISTRY if r.format == name) if c.kind is type(result)),
                    None)
    if renderer is None:
        raise FlametoolError(f"{name}: cannot show a {type(result).__name__}")
    return renderer(options if options is not None else Options()).render(result)
