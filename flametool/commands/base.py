"""What every command is and gets: the Command protocol (its name, its help, its options, its run), the
Context it runs in (the two consoles and the words it was started with), and the steps the measuring and
reading commands share (the terminal's options, writing and rendering the report)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from rich.console import Console

from .. import render
from ..analyse import dispatch
from ..errors import WriteError
from ..render import terminal
from ..render.base import Options
from ..run import rundir


@dataclass(frozen=True)
class Context:
    """A command's surroundings: `out` for what it answers, `err` for progress and faults, `argv` as given."""

    err: Console
    out: Console
    argv: list[str]


class Command(Protocol):
    """One subcommand: `main` builds the parser from `name`, `help` and `add_arguments`, then calls `run`,
    which returns the exit code (a FlametoolError raised in it becomes one line and its code)."""

    name: str
    help: str

    def add_arguments(self, parser: argparse.ArgumentParser) -> None: ...

    def run(self, args: argparse.Namespace, ctx: Context) -> int: ...


def terminal_options(out: Console, **given) -> Options:
    """The terminal's width and colours, for the terminal renderer."""
    return Options(width=out.width, colour=out.is_terminal, **given)


def write_report(run_dir: Path, analysed: dispatch.AnyAnalysis, err: Console, out: Console) -> bool:
    """The report is made from what run.json already holds, so failing to render it loses nothing:
    say so in one line and how to try again. A report that renders but cannot be written (a full disk) is
    a fault of the machine (False: exit 2); one that fails to render lets the measurement's exit code stand."""
    try:
        path = rundir.write_report(run_dir, render.show("html", analysed))
    except WriteError as exc:
        terminal.say(err, f"flametool: {exc}; run.json is complete; retry with: flametool report {rundir.shown(run_dir)}")
        return False
    except Exception as exc:  # noqa: BLE001 - any fault here must not hide a finished measurement
        terminal.say(err, f"flametool: report.html not written ({type(exc).__name__}: {exc}); run.json is complete; "
                          f"retry with: flametool report {rundir.shown(run_dir)}")
        return True
    terminal.say(out, f"report: {rundir.shown(path)}")
    return True


def page(run: Path) -> str:
    """The report of a run directory: loaded, analysed once, rendered."""
    return render.show("html", dispatch.analyse_dir(run))
