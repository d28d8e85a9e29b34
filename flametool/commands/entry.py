"""The console script's entry point (`flametool`, `python -m flametool`): the command line's modules are imported
inside it, so that a Ctrl-C while they load (the first tens of milliseconds) ends as every later one does, with
one line and exit code 130, not a traceback."""

from __future__ import annotations

import sys


def main_entry() -> None:
    try:
        from .main import interrupted, main
    except KeyboardInterrupt:
        sys.stderr.write("flametool: interrupted\n")
        sys.exit(130)
    try:
        code = main()
    except KeyboardInterrupt as exc:  # past main's own handling (its last lines): the same line
        code = interrupted(exc)
    sys.exit(code)
