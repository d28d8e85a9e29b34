"""export: a run's stacks with normalized names, for speedscope or flame graph tools."""

from __future__ import annotations

import argparse
from pathlib import Path

from .. import render
from .base import Context, paused


class Export:
    """`flametool export`: stacks as speedscope JSON or folded lines."""

    name = "export"
    help = ("a run's stacks with normalized names, for speedscope or flame graph tools")

    def add_arguments(self, p: argparse.ArgumentParser) -> None:
        p.add_argument("run", type=Path, metavar="RUN", help="run directory")
        p.add_argument("--format", required=True, help=render.formats_help("Stacks") + "; "
                       + render.formats_help("Timelines"))
        p.add_argument("--case", help="export only this case, of a sweep CASE@SIZE (default: every sampled case)")
        p.add_argument("--lines", action="store_true", help="one frame per source line instead of per function")
        p.add_argument("-o", "--output", type=Path, help="file to write (default, or -: standard output)")

    @paused
    def run(self, args: argparse.Namespace, ctx: Context) -> int:
        # the analysis (numpy) and the run directory's reader are imported here, not for `flametool --help`
        from ..analyse import compare
        from ..run import casenames, rundir

        out = ctx.out
        render.check(args.format, render.EXPORTS)
        run = rundir.load_profiled(args.run, "export")  # a sweep's sizes as cases (cupy@1024); an atlas says what it is
        case = None if args.case is None else casenames.case_named(args.run, run, args.case, "--case")
        if args.format in render.formats("Timelines"):  # one step's CUPTI records, not the stacks
            from ..analyse import timeline

            text = render.show(args.format, timeline.timelines(args.run, run, case))
        else:
            text = render.show(args.format, compare.stacks(args.run, run, case, args.lines))
        if args.output is None or args.output == Path("-"):
            out.file.write(text)
            out.file.flush()
            return 0
        rundir.write_output(args.output, text, args.run)
        return 0
