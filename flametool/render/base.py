"""What every output of flametool is: a renderer of one kind of analysis result (compare.Analysis,
sweep.SweepAnalysis, atlas.AtlasAnalysis, diff.DiffResult, summary.Summary, or for an export
compare.Stacks) to text in one format, made with one Options object: `Renderer[Result]`.

The command line names the format; render.show picks the renderer of that format for the result's kind,
makes it with the options the user gave, and the command writes what it returns: to the terminal, to
RUN/report.html, or to the file or stream the user named. A new output is one subclass, registered in
render/__init__.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Generic, TypeVar

from ..analyse.compare import Stacks


@dataclass(frozen=True)
class Options:
    """How a result is laid out, for every renderer alike: each reads the options it has a use for."""

    width: int | None = None  # terminal: columns (None: 160)
    colour: bool = False  # terminal: colour and styles
    view: str = "caller"  # terminal: system libraries charged to their callers' layers, or "library": apart
    top: int = 10  # terminal: frames listed in a diff
    ascii: bool = False  # terminal: tables drawn in ASCII, for an output that cannot take UTF-8 (PYTHONIOENCODING=ascii)


Result = TypeVar("Result")


class Renderer(Generic[Result]):
    """One output format (`name`) of one kind of result (`kind`, the class `render` takes)."""

    name: ClassVar[str]
    kind: ClassVar[type]

    def __init__(self, options: Options = Options()) -> None:
        self.options = options

    def render(self, result: Result) -> str:
        raise NotImplementedError


class ExportRenderer(Renderer[Stacks]):
    """A file other tools read, of a run's stacks (compare.Stacks: the cases chosen, named as chosen)."""

    kind = Stacks
