"""What every output of flametool is: a renderer of an analysis result (analysis.Analysis, sweep.SweepAnalysis,
analysis.DiffResult, or for an export analysis.Stacks) to text, made with one Options object.

The command line picks one by name (render.get), makes it with the options the user gave, and writes what
it returns: to the terminal, to RUN/report.html, or to the file or stream the user named. A new output format
is one module here with one subclass, registered in render/__init__.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..analyse.analysis import Stacks


@dataclass(frozen=True)
class Options:
    """How a result is laid out, for every renderer alike: each reads the options it has a use for."""

    width: int | None = None  # terminal: columns (None: 160)
    colour: bool = False  # terminal: colour and styles
    view: str = "caller"  # terminal: system libraries charged to their callers' layers, or "library": apart
    top: int = 10  # terminal: frames listed in a diff


class Renderer:
    """One output of an analysis result."""

    name: ClassVar[str]

    def __init__(self, options: Options = Options()) -> None:
        self.options = options

    def render(self, result) -> str:
        raise NotImplementedError


class ExportRenderer(Renderer):
    """A file other tools read, of a run's stacks (analysis.Stacks: the cases chosen, named as chosen)."""

    def render(self, result: Stacks) -> str:
        raise NotImplementedError
