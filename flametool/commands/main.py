"""The entry point: ``build_parser()`` describes the command line from the commands (one class each, in
flametool/commands/), ``main(argv)`` checks every input before anything starts and turns known failures into
one line on stderr and an exit code (2 bad input, 1 a case failed, 3 `--fail-above`: the case got slower than
allowed (its change's 95% interval wholly above it), 4 `--fail-above` inconclusive (the interval holds it), 130
interrupted), never a traceback."""

from __future__ import annotations

import argparse
import io
import os
import signal
import sys
from typing import TextIO, cast

from typing import TYPE_CHECKING

from .. import __version__
from ..errors import FlametoolError, Interrupted, interrupt_code
from .atlas import Atlas
from .base import Command, Context
from .compare import Compare, Sweep
from .diff import Diff
from .export import Export
from .options import Parser
from .report import Report
from .snakeviz import Snakeviz
from .streams import Stdout, reopen_closed_standard_streams
from .summary import Summary

# rich's consoles and the terminal's tables are imported once the command line has been read: `flametool --help`
# (argparse prints it and exits) needs neither, nor numpy and jinja2 behind them (issue 42)
if TYPE_CHECKING:
    from rich.console import Console

# in the order --help lists them
COMMANDS: dict[str, Command] = {c.name: c for c in (Compare(), Sweep(), Atlas(), Diff(), Summary(), Export(), Report(),
                                                   Snakeviz())}


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="flametool",
        description="Where the host (CPU) time goes when a GPU array library launches work, side by side.",
    )
    parser.add_argument("--version", action="version", version=f"flametool {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS.values():
        # `flametool COMMAND --help` opens with what the command does: its own description, else its line above
        description = getattr(command, "description", None) or command.help[0].upper() + command.help[1:] + "."
        command.add_arguments(sub.add_parser(command.name, help=command.help, description=description))
    return parser


def _terminate(signum, frame):  # SIGTERM and SIGHUP end a run like Ctrl-C: children stopped, run.json kept
    raise Interrupted(129 if signum == getattr(signal, "SIGHUP", None) else 130)


def take_stop_signals() -> dict:
    """SIGTERM, and SIGHUP (a closed terminal, a dropped ssh connection) unless it is ignored (`nohup`), end
    flametool as Ctrl-C does. Returns the handlers to restore."""
    previous = {signal.SIGTERM: signal.signal(signal.SIGTERM, _terminate)}
    hup = getattr(signal, "SIGHUP", None)
    if hup is not None and signal.getsignal(hup) is not signal.SIG_IGN:
        previous[hup] = signal.signal(hup, _terminate)
    return previous


def internal_error(exc: BaseException, err: Console) -> int:
    """Any exception no part of flametool expected: one line saying what and where the traceback went (a file
    in the temporary directory; never on the terminal), exit 1."""
    import tempfile
    import traceback

    from ..render import terminal

    details = "".join(traceback.format_exception(exc))
    where = "nowhere (the temporary directory cannot be written)"
    try:
        fd, path = tempfile.mkstemp(prefix="flametool-traceback-", suffix=".txt")
        with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace") as fh:
            fh.write(f"flametool {__version__}, python {sys.version.split()[0]}, argv {sys.argv!r}\n{details}")
        where = path
    except OSError:
        pass
    first = next((l.strip() for l in str(exc).splitlines() if l.strip()), "")
    what = f"{type(exc).__name__}: {first[:200]}" if first else type(exc).__name__
    terminal.say(err, f"flametool: internal error ({what}); the traceback is in {where}: please report it with that "
                      f"file (flametool {__version__})")
    return 1


def take_ctrl_c():
    """Make SIGINT stop flametool even when it was started with SIGINT ignored, and return what to restore.

    A shell without job control starts a background command with SIGINT ignored (a script's `setsid
    flametool compare ... &`), and Python keeps it ignored: a `kill -INT` to the run's process group then
    stopped nothing, and the run went on for as long as it was asked to. When flametool leads its own
    process group (setsid, or a shell with job control), a SIGINT sent to that group is meant for it. Run in
    a script's own group (`flametool ... &` without setsid), it keeps ignoring Ctrl-C, as the shell intends."""
    previous = signal.getsignal(signal.SIGINT)
    if previous is signal.SIG_IGN and os.getpgrp() == os.getpid():
        signal.signal(signal.SIGINT, signal.default_int_handler)
    return previous


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(argv)
    except KeyboardInterrupt as exc:
        # Ctrl-C before the command's own handling below is set up (parsing its options, importing rich and the
        # renderers: the first 0.2-0.4 s) or after it is undone: the same one line, never a traceback
        return interrupted(exc)


def interrupted(exc: KeyboardInterrupt) -> int:
    """'flametool: interrupted' on stderr as it is (no Console yet, or none left), and the exit code."""
    try:
        sys.stderr.write("flametool: interrupted\n")
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):  # a closed or missing stderr: the exit code says it
        pass
    return interrupt_code(exc)


def _main(argv: list[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    reopen_closed_standard_streams()
    for stream in (sys.stdout, sys.stderr):  # PYTHONIOENCODING=ascii: '×' printed as 'x', not a crash
        try:
            cast(io.TextIOWrapper, stream).reconfigure(errors="flametool-ascii")  # a stream without it: below
        except (AttributeError, ValueError, OSError):
            pass
    try:
        args = build_parser().parse_args(argv)
    except FlametoolError as exc:
        parse_error: FlametoolError | None = exc
    else:
        parse_error = None
        if getattr(COMMANDS[args.command], "measures", False):  # before the imports below (0.1 s on the CPU machine)
            from ..measure import machine

            machine.ask_ahead()
    from rich.console import Console

    from ..render import terminal

    # a closed terminal (SIGHUP) cannot take the last line: it goes nowhere, the exit code still says it
    # (Stdout has the file methods rich calls, though not the whole of TextIO: the casts say it stands for one)
    err = Console(file=cast(TextIO, Stdout(sys.stderr, quiet=True)), soft_wrap=True)
    stdout = Stdout(sys.stdout)
    # piped or redirected output is read in a log or an editor, not squeezed to 80 columns, unless COLUMNS says
    # how wide (rich reads COLUMNS itself when no width is given)
    columns = os.environ.get("COLUMNS", "").strip()
    given = int(columns) if columns.isdigit() and int(columns) > 0 else None
    out = Console(file=cast(TextIO, stdout), width=given or (None if stdout.isatty() else 160))
    if parse_error is not None:
        terminal.say(err, f"flametool: {parse_error}")
        return parse_error.exit_code
    previous = take_stop_signals()
    previous_int = take_ctrl_c()
    from .. import procs  # ctypes and subprocess: not for --help (parse_args exits above)

    previous_tstp = procs.take_ctrl_z()
    try:
        return COMMANDS[args.command].run(args, Context(err, out, argv))
    except FlametoolError as exc:
        terminal.say(err, f"flametool: {exc}")
        return exc.exit_code
    except KeyboardInterrupt as exc:
        err.print("flametool: interrupted", highlight=False)
        return interrupt_code(exc)
    except Exception as exc:  # noqa: BLE001 - the last resort: one line and a file, never a traceback
        return internal_error(exc, err)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if previous_int is not None:
            signal.signal(signal.SIGINT, previous_int)
        if previous_tstp is not None:
            signal.signal(signal.SIGTSTP, previous_tstp)

