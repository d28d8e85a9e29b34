"""summary: a run's headline figures for CI, in text, markdown or json, with the --fail-above verdict."""

from __future__ import annotations

import argparse
from pathlib import Path

from .. import errors, render
from .base import Context, paused
from .options import check_fail_above


class Summary:
    """`flametool summary`: the headline figures with intervals and the verdict."""

    name = "summary"
    help = ("a run's headline figures with intervals, largest layer and frame differences "
            "and the --fail-above verdict, for CI: text, markdown or json")

    def add_arguments(self, p: argparse.ArgumentParser) -> None:
        p.add_argument("run", type=Path, metavar="RUN", help="run directory (of compare, sweep or atlas)")
        p.add_argument("--format", default="text", help=render.formats_help("Summary", default="text"))
        p.add_argument("--fail-above", type=float, metavar="PCT",
                       help=f"exit {errors.SLOWER_EXIT} when a pair's head is slower than its base by more than PCT "
                            f"percent (relative to the anchor with --env), its whole 95%% interval above PCT; exit "
                            f"{errors.INCONCLUSIVE_EXIT} when the interval holds PCT")

    @paused
    def run(self, args: argparse.Namespace, ctx: Context) -> int:
        """The summary of a run, in the format asked; with --fail-above, the exit code of its worst verdict."""
        # the analyses (numpy) and their readers are imported here, not for `flametool --help`
        from ..analyse import dispatch, summary
        from ..render import terminal
        from ..run import rundir

        err, out = ctx.err, ctx.out
        check_fail_above(args)
        render.check(args.format, render.SUMMARIES)
        run = rundir.load(args.run)
        if args.fail_above is not None and run.kind != "compare":
            raise summary.not_judged(args.run, run.kind)  # before the analysis
        made = summary.of(dispatch.analyse(args.run, run), args.fail_above)
        out.file.write(render.show(args.format, made))
        out.file.flush()
        if made.verdict is not None:  # a pass is said as a failure is (docs/method.md), as diff says it
            terminal.say(err, f"flametool: {made.verdict.sentence}")
        return made.exit_code
