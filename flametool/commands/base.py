"""What every command is and gets: the Command protocol (its name, its help, its options, its run), the
Context it runs in (the two consoles and the words it was started with), and the steps the measuring and
reading commands share (the terminal's options, writing and rendering the report)."""

from __future__ import annotations

import argparse
import functools
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Protocol

from ..errors import WriteError

# What a command needs to run is imported where it runs, not here: `flametool --help` builds every command's
# options and must not wait for rich's consoles, numpy (the analyses) or jinja2 (the report) (issue 42)
if TYPE_CHECKING:
    from rich.console import Console

    from ..analyse import dispatch
    from ..render.base import Options


@dataclass(frozen=True)
class Context:
    """A command's surroundings: `out` for what it answers, `err` for progress and faults, `argv` as given."""

    err: Console
    out: Console
    argv: list[str]


class Command(Protocol):
    """One subcommand: `main` builds the parser from `name`, `help` and `add_arguments`, then calls `run`,
    which returns the exit code (a FlametoolError raised in it becomes one line and its code). A command that
    runs cases says `measures = True`: main then asks the CUDA driver in a thread before importing what `run`
    needs (machine.ask_ahead)."""

    name: str
    help: str

    def add_arguments(self, parser: argparse.ArgumentParser) -> None: ...

    def run(self, args: argparse.Namespace, ctx: Context) -> int: ...


def paused(run: Callable[..., int]) -> Callable[..., int]:
    """A reading command's `run` with Python's cyclic collector off while it reads and analyses (the analysis
    keeps millions of objects: compare.collector_paused says why)."""

    @functools.wraps(run)
    def paused_run(self, args: argparse.Namespace, ctx: Context) -> int:
        from ..analyse import compare

        with compare.collector_paused():
            return run(self, args, ctx)

    return paused_run


def terminal_options(out: Console, **given) -> Options:
    """The terminal's width and colours, for the terminal renderer."""
    from ..render.base import Options

    return Options(width=out.width, colour=out.is_terminal, ascii=not out.encoding.startswith("utf"), **given)


def write_report(run_dir: Path, analysed: dispatch.AnyAnalysis, err: Console, out: Console, before: str = "") -> bool:
    """The report is made from what run.json already holds, so failing to render it loses nothing:
    say so in one line and how to try again. A report that renders but cannot be written (a full disk) is
    a fault of the machine (False: exit 2); one that fails to render lets the measurement's exit code stand.
    `before`: the terminal's view, printed once the page is written, then its 'report:' line: a standard output
    that cannot be written, or a Ctrl-C while the view prints, leaves the page written all the same."""
    from .. import render
    from ..render import terminal
    from ..run import rundir

    retry = f"run.json is complete; retry with: flametool report {rundir.shell_word(run_dir)}"
    failed: str | None
    try:
        path = rundir.write_report(run_dir, render.show("html", analysed))
    except WriteError as exc:
        failed, written = f"flametool: {exc}; {retry}", False
    except Exception as exc:  # noqa: BLE001 - any fault here must not hide a finished measurement
        failed, written = f"flametool: report.html not written ({type(exc).__name__}: {exc}); {retry}", True
    else:
        failed, written = None, True
    out.file.write(before)
    if failed is not None:
        terminal.say(err, failed)
    else:
        terminal.say(out, f"report: {rundir.shown(path)}")
    return written


def page(run: Path, read_from: Path | None = None) -> str:
    """The report of a run directory: loaded, analysed once, rendered. `read_from`: the folder the page is written
    to where that is not the run directory (`report ATLAS -o FILE`): an atlas's links to its ops' pages, relative to
    the atlas's folder, are made relative to it, so that they still reach the pages (they led nowhere)."""
    import os
    from urllib.parse import quote

    from .. import render
    from ..analyse import atlas, dispatch
    from ..run import rundir

    analysed = dispatch.analyse_dir(run)
    if read_from is not None and isinstance(analysed, atlas.AtlasAnalysis):
        for row in analysed.rows:
            row.report = quote(Path(os.path.relpath(run.absolute() / row.dir / rundir.REPORT_FILE,
                                                    read_from.absolute())).as_posix())
    return render.show("html", analysed)
