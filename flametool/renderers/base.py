"""What every output of flametool is: a renderer of an analysis result (analysis.Analysis, sweep.SweepAnalysis
or analysis.DiffResult) to text, made with one Options object.

The command line picks one by name (renderers.get), makes it with the options the user gave, and writes what
it returns: to the terminal, to RUN/report.html, or to the file or stream the user named. A new output format
is one module here with one subclass, registered in renderers/__init__.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .. import attribution
from ..analysis import Analysis
from ..errors import FlametoolError


@dataclass(frozen=True)
class Options:
    """How a result is laid out, for every renderer alike: each reads the options it has a use for."""

    width: int | None = None  # terminal: columns (None: 160)
    colour: bool = False  # terminal: colour and styles
    view: str = "caller"  # terminal: system libraries charged to their callers' layers, or "library": apart
    top: int = 10  # terminal: frames listed in a diff
    case: str | None = None  # exports: this case only (None: every sampled case)
    by_line: bool = False  # exports: one frame per source line (the analysis must have read them so)


class Renderer:
    """One output of an analysis result."""

    name: ClassVar[str]

    def __init__(self, options: Options = Options()) -> None:
        self.options = options

    def render(self, result) -> str:
        raise NotImplementedError


class ExportRenderer(Renderer):
    """A file other tools read, of a run's stacks: every sampled case, or one (`case`), by function or by
    source line (`by_line`)."""

    @property
    def case(self) -> str | None:
        return self.options.case

    @property
    def by_line(self) -> bool:
        return self.options.by_line

    def profiles(self, analysed: Analysis) -> list[attribution.Profile]:
        run, run_dir = analysed.run, analysed.run_dir
        labels = [self.case] if self.case is not None else attribution.sampled_labels(run)
        if not labels:
            raise FlametoolError(f"{run_dir}: no case has stacks to export")
        if self.by_line:  # another naming of the same stacks: read again, keyed by line
            return [attribution.load_profile(run_dir, run, label, by_line=True) for label in labels]
        return [analysed.profiles[l] if l in analysed.profiles else attribution.load_profile(run_dir, run, l)
                for l in labels]
