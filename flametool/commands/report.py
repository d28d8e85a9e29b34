"""report: the HTML page of a run directory, rendered from it alone (no GPU needed)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import FlametoolError
from .base import Context, page, paused

# rundir.REPORT_FILE, written out: rundir reads run.json (run/record.py), which --help need not import (issue 42);
# tests/test_help_imports.py checks the two agree
REPORT_FILE = "report.html"


class Report:
    """`flametool report`: report.html (or -o FILE, or - for standard output) from a run directory."""

    name = "report"
    help = ("render report.html from a run directory (no GPU needed)")

    def add_arguments(self, p: argparse.ArgumentParser) -> None:
        p.add_argument("run", type=Path, metavar="RUN_DIR", help="run directory")
        p.add_argument("-o", "--output", type=Path, help=f"HTML file to write, - for standard output (default: RUN_DIR/{REPORT_FILE})")
        p.add_argument("--open", action="store_true", help="open the report in a web browser when there is one")

    @paused
    def run(self, args: argparse.Namespace, ctx: Context) -> int:
        """The page to RUN/report.html, to -o FILE, or with `-o -` to standard output; the line saying where it went
        goes to standard error, so that `-o /dev/stdout > page.html` is the page alone."""
        from ..render import terminal  # the analyses' formatting (numpy), not for `flametool --help`
        from ..run import rundir

        err, out = ctx.err, ctx.out
        if args.output == Path("-"):
            if args.open:
                raise FlametoolError("report -o - --open: a page on standard output cannot be opened; give -o FILE")
            out.file.write(page(args.run))
            out.file.flush()
            return 0
        path = rundir.write_report(args.run, page(args.run, None if args.output is None else args.output.parent), args.output)
        terminal.say(err, f"report: {rundir.shown(path)}")
        # an atlas's page in its directory links to its ops' pages: those are written again beside it (with -o
        # the pages go where asked, and nothing is written into the run directory)
        for part in rundir.load(args.run).parts if args.output is None else []:
            if (args.run / part.dir / rundir.RUN_FILE).exists():
                terminal.say(err, f"report: {rundir.shown(rundir.write_report(args.run / part.dir, page(args.run / part.dir)))}")
        if args.open:
            import webbrowser

            if not webbrowser.open(path.resolve().as_uri()):
                terminal.say(err, f"flametool: no web browser found; open {path} yourself")
        return 0
