"""compare and sweep: measure (runner), then print the analysis and write the report."""

from __future__ import annotations

import argparse
import time

from typing import TYPE_CHECKING

from ..analyse.views import VIEWS
from ..errors import CaseError, RunDirError, interrupt_code
from ..measure.config import CPU, CUDA, SETTLED, Config
from .base import Context
from .options import case_options, processes_help, sampling_options

if TYPE_CHECKING:
    from rich.console import Console


class Compare:
    """`flametool compare`: every case in each of several fresh processes, their loops interleaved, then each sampled alone."""

    name = "compare"
    measures = True  # main asks the driver ahead (machine.ask_ahead)
    help = ("time the cases side by side in several fresh processes (their loops interleaved, so each "
            "process's speed cancels out of the comparison), then profile each case alone; print the comparison and "
            "write a run directory with report.html")
    description = (help[0].upper() + help[1:] + ". With no options: cupy against torch on a CUDA device, numpy "
                   "against torch on the CPU.")

    def add_arguments(self, p: argparse.ArgumentParser) -> None:
        case_options(p)
        p.add_argument("--layers", choices=VIEWS, default="caller",
                       help="system libraries (libc, malloc, locks) in the terminal's layer table: charged to the layer that "
                            "called them (caller, the default) or as a layer of their own (library); the report has both")
        p.add_argument("--shape", help="matmul: M,K,N, a is MxK, b is KxN (default " + ",".join(map(str, CUDA.shape)) + " on CUDA, "
                                       + ",".join(map(str, CPU.shape)) + " on the CPU); the other ops: N elements or R,C "
                                       "(default: the op's host-bound size, as the atlas samples it); a workload: FUNC's shape "
                                       "(default: its own)")
        sampling_options(p)
        p.add_argument("--sample-shape", help="the shape to sample at (default: the shape when host-bound, else the op's "
                                              "host-bound size: 1024,1024,1024 for matmul)")
        p.add_argument("--no-sample", action="store_true", help="timings and cProfile only; no py-spy")
        p.add_argument("--no-count", action="store_true",
                       help="no counted loop: no counts of Python calls, CUDA API calls, kernels and allocations per "
                            "call (docs/counts.md; CUPTI cannot be shared with another profiler attached)")
        p.add_argument("--env", action="append", default=[], metavar="NAME=PYTHON",
                       help="run the cases under this interpreter too (a venv with another build), labelled CASE@NAME; "
                            "give two or more: their processes take turns, each also timing the anchor, and the pair "
                            "CASE@FIRST:CASE@OTHER is compared relative to it (README: comparing two builds)")
        p.add_argument("--anchor", metavar="CASE",
                       help="with --env: the case every environment's processes time beside the others, whose own speed "
                            "cancels the host's (default: the last case of --libs whose library has one version, the "
                            "same installed files and the same top-level objects in every environment, said before the "
                            "run starts; none such: exit 2, asking for --anchor)")
        p.add_argument("--fail-above", type=float, metavar="PCT",
                       help="add processes until every pair's verdict is decided: slower by more than PCT%% (its 95%% "
                            "interval wholly above), or not (wholly at or below), or --budget is spent; exit as summary "
                            "--fail-above does (3 slower, 4 inconclusive)")
        p.add_argument("--budget", type=float, metavar="SECONDS",
                       help="seconds the timing processes may take in all before compare stops adding processes "
                            f"(default with --env {CUDA.env_budget:g}; without, {CPU.extra_seconds:g} s past --processes)")
        p.add_argument("--settle", type=float, metavar="PCT",
                       help="add processes until each pair's 95%% interval reaches no further than PCT%% from its ratio "
                            f"(default {SETTLED * 100:g}; with --env the anchored ratio's, {CUDA.env_settle * 100:g} on a GPU and "
                            f"{CPU.env_settle * 100:g} on the CPU), within "
                            "--budget and while more processes spreading as these would settle it (the output says "
                            "where they did not): a smaller PCT, a narrower interval and a longer run")
        p.add_argument("--timed-seconds", type=float, metavar="S",
                       help=f"seconds of rounds per case in each process at a host-bound shape (default {CPU.timed_seconds:g})")
        progress_option(p)
        p.add_argument("--no-spares", action="store_true",
                       help="do not start the later processes ahead (on a GPU they import while another process times "
                            "its loops): for measuring whether they change the speeds drawn")
        p.add_argument("--fresh-processes", action="store_true",
                       help="start every timing process as a fresh interpreter that imports the libraries itself "
                            "(the default; with the spares above on a GPU)")
        p.add_argument("--fork-processes", action="store_true",
                       help="fork the timing processes from a server per environment that imported the libraries "
                            "once (faster on a CPU; not calibrated: on the H200 its children shared one server's "
                            "memory layout and two null A/Bs of two excluded 1, docs/calibration.md)")
        p.add_argument("--processes-at-once", type=int, metavar="N",
                       help="run the timing processes after each environment's first N at a time, each on CPUs of "
                            "its own (the environments' firsts too at the op's host-bound shape), and with --no-sample "
                            "the profiled ones too (default with --env on a GPU "
                            f"{CUDA.env_at_once}, the environments side by side, as calibrated on the H200; otherwise 1)")
        p.add_argument("--forks-per-server", type=int, metavar="N",
                       help="with --fork-processes: a fork server forks at most N timing processes, then a new one "
                            "(imported afresh) takes over (default: one server per environment for the run)")

    def run(self, args: argparse.Namespace, ctx: Context) -> int:
        return cmd_compare(args, ctx.argv, ctx.err, ctx.out)


class Sweep:
    """`flametool sweep`: the cases timed over a ladder of sizes."""

    name = "sweep"
    measures = True  # main asks the driver ahead (machine.ask_ahead)
    help = ("time each case over a ladder of sizes: host, GPU and wall time per call, "
            "and where each library stops being host-bound")
    description = ("Time each case over a ladder of sizes, paired in fresh processes as compare pairs them: host, GPU "
                   "and wall time per call at each size, and the size where each library's GPU time overtakes its host "
                   "time (the crossover). Writes a run directory with report.html.")

    def add_arguments(self, p: argparse.ArgumentParser) -> None:
        case_options(p)
        p.add_argument("--sizes", help="comma-separated sizes, each N (an NxN by NxN product) or MxKxN, e.g. "
                                       "64,256,1024,4096x1024x4096; 64,128,...,8192 for a geometric ladder; with ';' "
                                       "between sizes, M,K,N too (default: 64 doubling to 16384, then the seed's "
                                       "65536x24576x12288 on CUDA; 8 doubling to 512 on the CPU); for the other ops "
                                       "element counts N or RxC (default: 1024 growing 4x to 2^28 on CUDA, 64 to 2^18 "
                                       "on the CPU); for a workload its shapes AxB..., 16x256,32x256,...,1024x256 a "
                                       "ladder of them (the figures that change grow, the others stay)")
        p.add_argument("--sample", action="store_true",
                       help="also profile each case alone (cProfile and py-spy) at each size where it is host-bound, for "
                            "the host time per call by layer there (default: timings only)")
        sampling_options(p)
        progress_option(p)
        processes_help(p, "at every size", "a sweep")

    def run(self, args: argparse.Namespace, ctx: Context) -> int:
        return cmd_compare(args, ctx.argv, ctx.err, ctx.out)


def progress_option(p: argparse.ArgumentParser) -> None:
    """--progress, on compare, sweep and atlas (the words are render.progress.Progress's)."""
    p.add_argument("--progress", choices=("auto", "bar", "lines", "all", "none"), default="auto",
                   help="what is running, on standard error: bar, one line that changes (a terminal); lines, a line "
                        "per phase of each process and every 10 s while one lasts (a log); all, a line for every step "
                        "of every process (to see where a run hangs); none; auto (the default): bar in a terminal, "
                        "else lines")


def cmd_compare(args: argparse.Namespace, argv: list[str], err: Console, out: Console) -> int:
    """compare and sweep: measure, then print the analysis and write the report."""
    # the runner, the analyses (numpy) and the report (jinja2) are imported here, not for `flametool --help`
    from .. import render
    from ..analyse import dispatch
    from ..measure import measurement, runner
    from ..render import format as fmt, progress as live, terminal
    from ..run import rundir
    from ..run.record import size_name
    from .base import terminal_options, write_report
    from .settings import compare_config, sweep_config

    sweeping = args.command == "sweep"
    config = (sweep_config if sweeping else compare_config)(args, lambda text: terminal.say(err, text))
    started = time.monotonic()
    mode = getattr(args, "progress", "auto")

    def headline_now() -> None:
        """The headline as soon as the timing is done (a terminal's spinner: the answer need not wait for the
        profiling); the full view after it still opens with it."""
        try:
            partial = rundir.load(config.out)
            a = dispatch.analyse(config.out, partial, attribute=False)
        except Exception:  # noqa: BLE001 - an early look that cannot be had changes nothing: the end says it all
            return
        lines = [line for p in getattr(a, "pairs", []) for line in fmt.pair_lines(p, partial, partial.config.timing_processes)]
        for line in lines:
            terminal.say(err, line)
        if lines:
            terminal.say(err, "(timing done; each case is now profiled alone, and the whole view follows)")

    early = headline_now if not sweeping and (mode == "bar" or (mode == "auto" and err.is_terminal)) else None
    with live.Progress(err, mode, early) as progress:
        try:
            run_dir, run = (runner.sweep if sweeping else runner.compare)(config, ["flametool", *argv], progress.update)
        except KeyboardInterrupt as exc:
            kept = config.out / rundir.RUN_FILE
            terminal.say(err, f"flametool: interrupted; what finished is kept in {rundir.shown(kept)} (complete: false)"
                         if kept.exists() else "flametool: interrupted before anything was measured")
            return interrupt_code(exc)
    kept_in = f"every timing is kept in {rundir.shown(run_dir / rundir.RUN_FILE)}"
    gone = [name for r in run.results.values() if r.profile is not None for name in r.profile.files.values()
            if not (run_dir / name).exists()]
    if gone:  # a case that cleans up after itself removed what the run wrote beside it
        raise CaseError(f"{rundir.shown(run_dir)}: {', '.join(gone)} removed while the run went on (by a case that "
                        f"cleans up after itself?); {kept_in}")
    try:
        analysed = dispatch.analyse(run_dir, run)
        view = getattr(args, "layers", "caller")
        # the page is written before the view prints (write_report): a standard output that cannot take it, or a
        # Ctrl-C while it prints, leaves report.html written
        written = write_report(run_dir, analysed, err, out,
                               before=render.show("terminal", analysed, terminal_options(out, view=view)))
    except RunDirError as exc:  # a file the run wrote was changed under it
        raise CaseError(f"{exc} (changed while the run went on?); {kept_in}") from None
    except KeyboardInterrupt as exc:  # measured and saved: only what is made from run.json is left
        report = run_dir / rundir.REPORT_FILE
        terminal.say(err, f"flametool: interrupted; {kept_in} (complete)" + (
            f", and the report in {rundir.shown(report)}" if report.exists() else
            f"; flametool report {rundir.shell_word(run_dir)} writes the report"))
        return interrupt_code(exc)
    failed = [l for l, r in run.results.items() if r.error]
    for label in failed:  # --keep-going: each failed case, and where what it printed is (as without it)
        logs = measurement.printed_logs(run_dir, run, label)
        terminal.say(err, f"flametool: case {label!r}: {run.results[label].error}"
                          + (f" (what it printed: {', '.join(logs)} in {rundir.shown(run_dir)})" if logs else ""))
    # a sweep's case that failed at one size (out of memory at the largest) still has the others; one that failed
    # at every size has nothing, as a case of compare that failed
    nowhere = [l for l, r in run.results.items() if sweeping and not r.error and r.points
               and not any(p.processes for p in r.points)]
    for label in nowhere:
        first = next((p for p in run.results[label].points if p.error), None)
        terminal.say(err, f"flametool: case {label!r}: failed at every size" + (
            f" (at {size_name(first.shape, config.op)}: {first.error})" if first else ""))
    failed += nowhere
    # a sampler that hung or crashed kept what it had, but the run is not what was asked for
    unsampled = [l for l, r in run.results.items() if r.sampling is not None and not r.sampling.complete]
    for label in unsampled:
        sampling = run.results[label].sampling
        assert sampling is not None  # unsampled: sampled, incompletely
        terminal.say(err, f"flametool: case {label!r}: sampling incomplete: {sampling.error}")
    # a timing process lost is one process fewer, not a failure; a profile lost is the profile, not the verdict
    for g in run.groups:
        if g.lost:
            terminal.say(err, f"warning: {rundir.group_stem(g.cases)}: lost {len(g.lost)} timing process"
                              f"{'' if len(g.lost) == 1 else 'es'} ({'; '.join(g.lost)}); went on from the other "
                              f"{g.processes}")
    for label, r in run.results.items():
        for line in r.warnings:
            terminal.say(err, f"warning: case {label!r}: {line}")
    lost = [l for l, r in run.results.items() if r.profile_error]
    for label in lost:
        terminal.say(err, f"flametool: case {label!r}: {run.results[label].profile_error}")
    code = 0
    if not sweeping and config.fail_above is not None:
        code = decided_verdict(analysed, config, time.monotonic() - started, out)
        if not failed:  # what was timed decides, whatever became of a profile
            return code if written else 2
    return 1 if failed or unsampled or lost else (code if written else 2)


def decided_verdict(analysed, config: Config, took: float, out: Console) -> int:
    """compare --fail-above: what was decided for each pair, after how many processes and how long; the exit
    code of the worst verdict, as summary --fail-above gives it."""
    from ..analyse import summary
    from ..render import terminal

    made = summary.of(analysed, config.fail_above)
    for p in made.pairs:
        v = p.verdict
        if v is None:  # summary.of gives every pair a verdict with --fail-above
            continue
        how = how_decided(v.outcome, p.change, config.budget, config.max_processes, config.processes)
        # one line however long, as diff and summary say theirs: wrapped at a log's 160 columns, its tail
        # '--fail-above 5%' stood on a line of its own, read as the start of the next pair's verdict line
        terminal.say(out, f"--fail-above {config.fail_above:g}%: {v.outcome} ({how}) over {p.units} in {took:.0f} s: "
                          f"{v.sentence}", soft_wrap=True)
    return made.exit_code


def how_decided(outcome: str, change, budget: float | None, most: int | None = None,
                least: int | None = None) -> str:
    """compare --fail-above's word on how a pair's verdict came: decided, not with the most processes compare runs
    (`most` a side: the processes stopped there, not the budget), not with the `least` it always runs (--processes:
    the budget bounds only the processes added after them, so a run of --budget 15 that took 57 s was said 'not
    decided within the budget of 15 s'), or not within the budget; a pair not timed in
    the same processes (--isolate) is given no process past --processes (analyse.diff.not_paired), so its budget
    never ran out: 'not decided within the budget of 15 s' was said of a run that stopped after 7 s."""
    from ..analyse import diff
    from ..run import anchoring

    if outcome != "inconclusive":
        return "decided"
    if diff.not_paired(change):
        return "not decided: not paired, so no processes were added"
    figures = change.anchored if change.anchored is not None else change.absolute
    ran = anchoring.processes_a_side(figures) if figures is not None else None
    a_side = " a side" if change.anchored else ""
    if most is not None and ran is not None and ran >= most:
        return f"not decided with the most processes compare runs ({most}{a_side})"
    if least is not None and budget is not None and ran is not None and ran <= least:
        return (f"not decided with the {least} process{'' if least == 1 else 'es'}{a_side} it starts with "
                f"(--processes; the budget of {budget:g} s bounds only the processes added after them)")
    return f"not decided within the budget of {budget:g} s" if budget is not None else "not decided"
