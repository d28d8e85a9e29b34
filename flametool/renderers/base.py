"""What every output of flametool is: a renderer of an analysed run directory (analysis.Analysis) to text.

The command line picks one by name (renderers.get) and writes what it returns: to the terminal, to
RUN/report.html, or to the file or stream the user named. A new output format is one module here with one
subclass, registered in renderers/__init__.py.
"""

from __future__ import annotations

from typing import ClassVar

from .. import attribution
from ..analysis import Analysis
from ..errors import FlametoolError


class Renderer:
    """One output of an analysed run."""

    name: ClassVar[str]

    def render(self, analysed: Analysis) -> str:
        raise NotImplementedError


class ExportRenderer(Renderer):
    """A file other tools read, of a run's stacks: every sampled case, or one (`case`), by function or by
    source line (`by_line`)."""

    def __init__(self, case: str | None = None, by_line: bool = False) -> None:
        self.case, self.by_line = case, by_line

    def profiles(self, analysed: Analysis) -> list[attribution.Profile]:
        run, run_dir = analysed.run, analysed.run_dir
        labels = [self.case] if self.case is not None else attribution.sampled_labels(run)
        if not labels:
            raise FlametoolError(f"{run_dir}: no case has stacks to export")
        if self.by_line:  # another naming of the same stacks: read again, keyed by line
            return [attribution.load_profile(run_dir, run, label, by_line=True) for label in labels]
        return [analysed.profiles[l] if l in analysed.profiles else attribution.load_profile(run_dir, run, l)
                for l in labels]
