"""diff: one case in two runs, or two cases of one run; with --fail-above, the verdict as the exit code."""

from __future__ import annotations

import argparse
from pathlib import Path

from .. import errors, render
from ..analyse.views import VIEWS
from ..errors import FlametoolError
from .base import Context, paused, terminal_options
from .options import check_fail_above, check_limits


TOP = 15  # frames the text format lists without --top


class Diff:
    """`flametool diff`: layers and frames, head - base, and the change relative to the anchor."""

    name = "diff"
    help = ("one case in two run directories (RUN_A RUN_B), or two cases of one run "
            "(RUN --base A --head B): layers and frames, head - base")

    def add_arguments(self, p: argparse.ArgumentParser) -> None:
        p.add_argument("run_a", type=Path, metavar="RUN_A", help="base run directory (or the run, with --base/--head)")
        p.add_argument("run_b", type=Path, metavar="RUN_B", nargs="?", help="head run directory")
        p.add_argument("--case", help="case label, of two sweeps CASE@SIZE (default: the first sampled case both runs have)")
        p.add_argument("--layers", choices=VIEWS, default="caller",
                       help="system libraries charged to their callers' layers (caller, the default) or apart (library)")
        p.add_argument("--base", help="with one run: the base case")
        p.add_argument("--head", help="with one run: the head case")
        p.add_argument("--anchor", metavar="CASE",
                       help="the case both runs timed beside the case, that the change is taken relative to (default: "
                            "one whose library is at one version in both runs, the runs' own anchor first, else the "
                            "first such case; one whose library changed version only where no other is there, and "
                            "then said)")
        p.add_argument("--fail-above", type=float, metavar="PCT",
                       help=f"exit {errors.SLOWER_EXIT} when the case's host time per call (relative to the anchor) grew "
                            f"by more than PCT percent, its whole 95%% interval above PCT; exit {errors.INCONCLUSIVE_EXIT} "
                            "(inconclusive) when the interval holds PCT")
        p.add_argument("--allow-unlike", action="store_true",
                       help="give a --fail-above verdict even when the two runs measured different work (op, shape, "
                            "dtype, device): without it such a diff says what differs and exits 2 instead")
        p.add_argument("--top", type=int, help=f"frames to list in the text format (default {TOP}; markdown lists "
                                                "the largest, json every one)")
        p.add_argument("--format", default="text", metavar="FORMAT",
                       help=f"text ({render.about('terminal', 'DiffResult')}, the default), or a summary: "
                            + render.formats_help("Summary", leave_out=("text",)))

    @paused
    def run(self, args: argparse.Namespace, ctx: Context) -> int:
        # the analyses (numpy) and the terminal's tables are imported here, not for `flametool --help`
        from ..analyse import diff, summary
        from ..render import terminal

        err, out = ctx.err, ctx.out
        check_fail_above(args)
        render.check(args.format, ("text",) + tuple(f for f in render.SUMMARIES if f != "text"))
        if args.top is not None and args.format != "text":
            # the summary formats do not list frames by --top: it would be taken as set and do nothing
            raise FlametoolError(f"--top with --format {args.format}: --top is the text format's frame table; "
                                 + ("markdown names the largest frame difference" if args.format == "markdown" else
                                    "json lists every frame (pairs[].frames, largest difference first)"))
        if args.top is not None and args.top < 0:
            raise FlametoolError(f"--top {args.top}: must be 0 or more")
        check_limits(args)
        if args.base or args.head:
            if not (args.base and args.head) or args.run_b is not None or args.case is not None:
                raise FlametoolError("diff RUN --base A --head B: one run and two of its cases (or RUN_A RUN_B [--case C])")
            if args.anchor is not None:
                raise FlametoolError("diff RUN --base A --head B --anchor: the anchor is for two runs (RUN_A RUN_B)")
            if args.base == args.head:
                raise FlametoolError(f"diff RUN --base {args.base} --head {args.head}: one case against itself; name "
                                     "two different cases of the run")
            result = diff.diff_cases(args.run_a, args.base, args.head, args.layers)
        elif args.run_b is None:
            raise FlametoolError("diff: give two runs (RUN_A RUN_B), or one run with --base A --head B")
        else:
            result = diff.diff_runs(args.run_a, args.run_b, args.case, args.layers, args.anchor)
        if args.format == "text":
            out.file.write(render.show("terminal", result, terminal_options(out, top=TOP if args.top is None else args.top)))
        else:
            out.file.write(render.show(args.format, summary.of(result, args.fail_above, args.allow_unlike)))
            out.file.flush()
        if args.fail_above is None:
            return 0
        assert result.change is not None  # diff_runs and diff_cases always set it
        if result.unlike and not args.allow_unlike:
            raise FlametoolError(summary.unlike_sentence(result))
        # the verdict as the summary formats give it (its pair's label: 'numpy@b vs numpy@a', 'cupy: B vs A')
        decided = summary.of(result, args.fail_above, args.allow_unlike).verdict
        assert decided is not None  # a change, its work alike (or --allow-unlike): decided, or inconclusive
        # passed too: a CI log says what was decided, not only an exit code
        terminal.say(err, f"flametool: {decided.sentence}")
        return decided.exit_code
