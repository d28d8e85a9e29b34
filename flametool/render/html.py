"""The HTML renderer, report.html: the compare page's view model (Report, built from the analysis by `build`)
and the three pages' renderers.

A new section of the page is a module render/report_NAME.py (a dataclass of what it shows, decided there, and a
function that fills it from the analysis), a field of Report here, and a partial in templates/partials/ that lays
it out. The sections: report_headline, report_caveats, report_counts, report_layers, report_flames,
report_cprofile, report_environment; the Jinja2 environment: jinja_env.py.

Everything the page shows is decided in Python, as plain dataclasses of strings and numbers; the templates in
templates/ only lay it out. The page is one file with its style, script and data inline, so it opens from
file:// anywhere, with no network. It is rendered from the run directory alone (run.json, the .folded and
.prof files, which the analysis read), which is why `flametool report` works on a machine without a GPU.
The renderer reads no file of the run: what it shows comes in the analysis.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from markupsafe import Markup

from .. import __version__
from . import aligned_lines, atlas_page, lines_view, sweep_page
from ..analyse.compare import Analysis
from ..analyse.attribution import CaseCosts
from ..analyse.sweep import SweepAnalysis
from ..analyse.atlas import AtlasAnalysis
from .base import Renderer
from .jinja_env import ATLAS_PAGE, PAGE, SWEEP_PAGE, asset, environment, fill
from .report_caveats import Caveat, warnings
from .report_counts import CountsSection, counts_section
from .report_cprofile import CProfileCase, cprofile_cases
from .report_environment import environment_rows
from .report_flames import FlameGraphs, flame_graphs
from .report_headline import Headline, headline
from .report_layers import LAYER_RULE, FrameTable, Layers, diff_table, frame_tables, layer_section

REPORT_FILE = "report.html"


@dataclass
class Report:
    pairs: list[str]  # the compared pairs with a diff, "head − base": the page shows one at a time
    title: str
    run_dir: str
    generated: str
    version: str
    complete: bool
    headline: Headline
    warnings: list[Caveat]
    layers: Layers  # the default view: system libraries charged to the layer that called them
    layers_library: Layers  # system libraries as layers of their own
    layer_rule: str
    frame_tables: list[FrameTable]
    diff_tables: list[FrameTable]
    flames: FlameGraphs
    cprofile: list[CProfileCase]
    environment: list[tuple[str, str]]
    css: Markup = Markup("")
    js: Markup = Markup("")
    sections: list[tuple[str, str]] = field(default_factory=list)
    counts: CountsSection | None = None  # what each call does, counted (runs recorded before counting: None)
    lines: lines_view.LinesSection | None = None  # host time per source line (render/lines_view.py)
    aligned: aligned_lines.AlignedSection | None = None  # the step lines the cases share (render/aligned_lines.py)


SECTIONS = [("headline", "Headline"), ("warnings", "Fairness"), ("layers", "Layers"), ("frames", "Hot frames"),
            ("flames", "Flame graphs"), ("cprofile", "cProfile"), ("environment", "Environment")]


def page_title(a: Analysis, labels: list[str]) -> str:
    """What the page is of: its pairs as the headline says them (head vs base: 'torch vs cupy', where the cases'
    order read 'cupy vs torch' above a headline of torch / cupy; an --env run's 'numpy@pr vs numpy@main', not
    its six cases with the anchor's), else its cases in their order."""
    if a.pairs:
        return "; ".join(f"{p.head} vs {p.base}" for p in a.pairs)
    return " vs ".join(labels) or "empty run"


def build(a: Analysis) -> Report:
    """The view model of an analysed run directory."""
    run, data = a.run_dir, a.run
    analysed_cases = {l: x for l, x in a.cases.items() if isinstance(x, CaseCosts)}
    diffs = [p.diff for p in a.pairs if p.diff]
    env = environment()
    labels = list(data.results)
    counted = counts_section(a)
    by_line = lines_view.section(a)
    aligned = aligned_lines.section(a)
    sections = SECTIONS if counted is None else SECTIONS[:1] + [("counts", "Counted")] + SECTIONS[1:]
    # after the hot frames, in the page's order: the lines aligned, then the lines (each where the page has it)
    after_frames = ([("aligned", "Lines aligned")] if aligned is not None else []) + \
        ([("lines", "Lines")] if by_line is not None else [])
    at = sections.index(("frames", "Hot frames")) + 1
    sections = [*sections[:at], *after_frames, *sections[at:]]
    return Report(
        pairs=[f"{d.head} − {d.base}" for d in diffs],
        title=f"flametool: {page_title(a, labels)}",
        run_dir=str(run),
        generated=datetime.now().astimezone().isoformat(timespec="seconds"),
        version=__version__,
        complete=data.complete,
        headline=headline(a),
        warnings=warnings(a, analysed_cases),
        layers=layer_section(*a.view("caller")),  # a completed analysis holds both (Analysis.views)
        layers_library=layer_section(*a.view("library")),
        layer_rule=LAYER_RULE,
        frame_tables=frame_tables(a.cases),
        diff_tables=[diff_table(d, i) for i, d in enumerate(diffs)],
        flames=flame_graphs(a, diffs),
        cprofile=cprofile_cases(a),
        environment=environment_rows(run, data),
        css=asset(env, "report.css"),
        js=asset(env, "report.js"),
        sections=sections,
        counts=counted,
        lines=by_line,
        aligned=aligned,
    )


class HtmlCompare(Renderer[Analysis]):
    """report.html of a compare run: one self-contained page."""

    name, kind = "html", Analysis

    def render(self, result: Analysis) -> str:
        return fill(PAGE, build(result))


class HtmlSweep(Renderer[SweepAnalysis]):
    """report.html of a sweep: its charts and tables."""

    name, kind = "html", SweepAnalysis

    def render(self, result: SweepAnalysis) -> str:
        env = environment()
        return fill(SWEEP_PAGE, sweep_page.build(result, asset(env, "report.css"),
                                                 environment_rows(result.run_dir, result.run)))


class HtmlAtlas(Renderer[AtlasAnalysis]):
    """report.html of an atlas: every op for every library, linking each op's own page."""

    name, kind = "html", AtlasAnalysis

    def render(self, result: AtlasAnalysis) -> str:
        return fill(ATLAS_PAGE, atlas_page.build(result, asset(environment(), "report.css"),
                                                 environment_rows(result.run_dir, result.run)))
