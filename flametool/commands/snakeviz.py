"""snakeviz: serve one case's cProfile file with snakeviz on 127.0.0.1 until Ctrl-C."""

from __future__ import annotations

import argparse
from pathlib import Path

from .base import Context

DEFAULT_PORT = 8080


class Snakeviz:
    """`flametool snakeviz`: a case's profile in snakeviz."""

    name = "snakeviz"
    help = ("serve a case's cProfile file with snakeviz on 127.0.0.1 until Ctrl-C")

    def add_arguments(self, p: argparse.ArgumentParser) -> None:
        p.add_argument("run", type=Path, metavar="RUN_DIR", help="run directory")
        p.add_argument("--case", help="case label, of a sweep CASE@SIZE (default: the first case with a .prof)")
        p.add_argument("--port", type=int, default=DEFAULT_PORT,
                       help=f"port to ask for (default {DEFAULT_PORT}; snakeviz takes a nearby one if it is in use)")

    def run(self, args: argparse.Namespace, ctx: Context) -> int:
        from ..render import terminal  # the analyses' formatting (numpy), not for `flametool --help`
        from . import drilldown  # a process, its temporary files and the profile reader: when it runs

        out = ctx.out
        target = drilldown.target(args.run, args.case)
        return drilldown.serve(target, args.port, lambda text: terminal.say(out, text, soft_wrap=True))
