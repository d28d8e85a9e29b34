"""atlas: every op for every library, each op a compare run, then the atlas's table and page."""

from __future__ import annotations

import argparse

from ..measure.config import ATLAS_SAMPLE_SECONDS
from ..workload import builtin_workloads, ops
from .base import Context
from .compare import progress_option
from .options import case_options, processes_help, sampling_options


class Atlas:
    """`flametool atlas`: every op (or --ops) measured as compare does, one page over them."""

    name = "atlas"
    measures = True  # main asks the driver ahead (machine.ask_ahead)
    help = ("every op (or --ops) for the chosen libraries, each paired and sampled as compare "
            "does at the op's host-bound size: a table and one page of host time per call, "
            "ratios to the fastest and the layer that differs most")

    def add_arguments(self, p: argparse.ArgumentParser) -> None:
        case_options(p, op=False, pair=False)
        p.add_argument("--ops", help="comma-separated ops (default: all: " + ", ".join(ops.OPS) + ")")
        p.add_argument("--workloads", metavar="NAMES",
                       help="comma-separated workloads instead of ops, each on every library of --libs (numpy, cupy, "
                            "torch, jax, jax-eager): " + ", ".join(builtin_workloads.WORKLOADS) + " or FILE.py:FUNC "
                            "(README: writing a workload)")
        sampling_options(p, ATLAS_SAMPLE_SECONDS)
        progress_option(p)
        processes_help(p, "at each op", "an atlas")

    def run(self, args: argparse.Namespace, ctx: Context) -> int:
        """Every op measured (each op's report written after it), then the atlas's table and page."""
        # the runner, the analyses (numpy) and the report (jinja2) are imported here, not for `flametool --help`
        from .. import render
        from ..analyse import dispatch
        from ..analyse.atlas import AtlasAnalysis
        from ..run.record import part_word
        from ..errors import interrupt_code
        from ..measure import atlasrun
        from ..render import progress as live, terminal
        from ..run import rundir
        from .base import page, terminal_options, write_report
        from .settings import atlas_config

        argv, err, out = ctx.argv, ctx.err, ctx.out
        config, names, found = atlas_config(args, lambda text: terminal.say(err, text))
        with live.Progress(err, getattr(args, "progress", "auto")) as progress:
            try:
                run_dir, run = atlasrun.atlas(config, names, ["flametool", *argv], progress.update,
                                              lambda op_dir: rundir.write_report(op_dir, page(op_dir)), found)
            except KeyboardInterrupt as exc:
                if not (config.out / rundir.RUN_FILE).exists():
                    terminal.say(err, "flametool: interrupted before anything was measured")
                    return interrupt_code(exc)
                # the ops that finished are shown and the page written, as at the end of a whole atlas
                analysed = dispatch.analyse_dir(config.out)
                out.file.write(render.show("terminal", analysed, terminal_options(out)))
                write_report(config.out, analysed, err, out)
                terminal.say(err, f"flametool: interrupted; the ops that finished are kept in {rundir.shown(config.out)} "
                                  "(complete: false)")
                return interrupt_code(exc)
        analysed = dispatch.analyse(run_dir, run)
        out.file.write(render.show("terminal", analysed, terminal_options(out)))
        written = write_report(run_dir, analysed, err, out)
        failed = [p for p in run.parts if p.error]
        for part in failed:
            terminal.say(err, f"flametool: {part_word(part.op)} {part.op}: {part.error}")
        # a case that failed while its op's run went on (a workload's run keeps going, as --keep-going does): said,
        # and the atlas exits 1, as compare does
        said = {p.op for p in failed}
        kept_going = []
        assert isinstance(analysed, AtlasAnalysis)  # an atlas's run.json is analysed as one
        for row in analysed.rows:
            if row.op in said:
                continue
            if row.error and not row.cells:
                kept_going.append(f"flametool: {part_word(row.op)} {row.op}: {row.error}")
            kept_going += [f"flametool: {part_word(row.op)} {row.op}: case {label!r}: {c.error}" for label, c in row.cells.items()
                           if c.error]
        for line in kept_going:
            terminal.say(err, line)
        return 1 if failed or kept_going else (0 if written else 2)
