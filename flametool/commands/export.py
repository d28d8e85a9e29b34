"""export: a run's stacks with normalized names, for speedscope or flame graph tools."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from ..analyse import compare
from .. import render
from ..run import rundir
from .base import Context


class Export:
    """`flametool export`: stacks as speedscope JSON or folded lines."""

    name = "export"
    help = ("a run's stacks with normalized names, for speedscope or flame graph tools")

    def add_arguments(self, p: argparse.ArgumentParser) -> None:
        p.add_argument("run", type=Path, metavar="RUN", help="run directory")
        p.add_argument("--format", required=True, help="speedscope (JSON, weights in us per call) or folded (sample counts)")
        p.add_argument("--case", help="export only this case (default: every sampled case)")
        p.add_argument("--lines", action="store_true", help="one frame per source line instead of per function")
        p.add_argument("-o", "--output", type=Path, help="file to write (default, or -: standard output)")

    def run(self, args: argparse.Namespace, ctx: Context) -> int:
        with compare.collector_paused():
            return cmd_export(args, ctx.out)


def cmd_export(args: argparse.Namespace, out: Console) -> int:
    render.check(args.format, render.EXPORTS)
    text = render.show(args.format, compare.stacks(args.run, rundir.load_profiled(args.run, "export"), args.case, args.lines))
    if args.output is None or args.output == Path("-"):
        out.file.write(text)
        out.file.flush()
        return 0
    rundir.write_output(args.output, text, args.run)
    return 0
