"""What `flametool sweep` prints: per size each case's host, GPU and wall time, per pair the wall-time ratio and
the extra host time in it, the layers at the sampled sizes, each case's crossover."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from . import format as fmt
from ..analyse import sweep
from ..analyse.layers import order
from ..analyse.sweep import SweepAnalysis
from .base import Renderer
from .compare_tables import print_counted
from .diff_tables import print_count_diff
from .terminal import Column, console_text, header, label as name_cell, say, show, show_parts, text, titled


def print_sweep(a: SweepAnalysis, console: Console) -> None:
    """A sweep: per size, each case's host, GPU and wall time per call; per pair, the wall-time ratio and the
    extra host time in it; each case's crossover."""
    run = a.run
    # a CPU sweep has no GPU times and every size is the host's: no GPU or bound columns
    cols = ("host", "GPU", "wall", "bound") if a.on_gpu else ("host", "wall")
    title = (f"{run.config.operation}: " + (
             "time per call at each size: host (CPU), GPU and wall (to the sync after the loop), each pooled over "
                   "the processes at the median process's speed; bound: host, the GPU waited on the host's launches, "
                   "or GPU, the host waited on the GPU"
                   if a.on_gpu else
                   "time per call at each size on the CPU, which does all the work: host clock around the loop and "
                   "wall (to the end of the loop), each pooled over the processes at the median process's speed"))
    columns = []
    for label in a.curves:
        points = [a.at(label, shape) for shape in a.shapes]
        for col in cols:
            cells: list[Text | str] = []
            for p in points:
                if p is None or p.cpu_us is None:
                    cells.append(("failed" if p is not None and p.error else "-") if col == cols[0] else "")
                else:
                    cells.append({"host": fmt.us(p.cpu_us), "GPU": fmt.us(p.gpu_us), "wall": fmt.us(p.wall_us),
                                  "bound": "host" if p.host_bound else "GPU"}[col])
            columns.append(Column(header(label, col), cells, "left" if col == "bound" else "right"))
    sizes = Column("size", [a.size_name(shape) for shape in a.shapes])
    show_parts(console, title, sizes, [columns], keep=len(cols))
    for sp in a.pairs:
        t = titled(f"{sp.head} against {sp.base}: wall time per call, " + ("paired" if sp.paired else "not paired")
                   + "; extra host: the slower case's host time beyond the other's, and the share of its wall time "
                     "that shows it")
        for col in ("size", "wall ratio (95%)", "wall difference", "slower", "extra host", "share of wall"):
            t.add_column(col, justify="left" if col in ("size", "slower") else "right")
        for pp in sp.points:
            w = pp.wall
            if w is None or w.ratio is None:
                t.add_row(a.size_name(pp.shape), "-", "", "", "", "")
                continue
            assert w.diff_us is not None  # a ratio comes with its difference
            iv = f" ({fmt.interval(w.ratio_interval, lambda v: f'{v:.3f}')})" if w.ratio_interval else ""
            ratio = "inconclusive" if sweep.side(pp) is None else fmt.ratio(w.ratio)  # the interval says nothing
            t.add_row(a.size_name(pp.shape), ratio + iv, fmt.signed(w.diff_us) + " us", name_cell(pp.slower or ""),
                      fmt.us(fmt.extra_host(a, sp, pp)), f"{pp.share:.0%}" if pp.share is not None else "-")
        if any(pp.wall is not None and pp.wall.ratio is not None for pp in sp.points):  # else a table of '-'
            show(console, t)
        for line in fmt.sweep_pair_lines(sp, run.config.timing_processes, run.config.operation):
            say(console, line)
    if a.layers:
        layers = order({k for by_case in a.layers.values() for x in by_case.values() for k in x.layers})
        # in parts where the layers do not fit beside one another (eleven layers drew it 123 wide at 80 columns),
        # each part headed by the size and case again
        rows = [(size, label, x) for size, by_case in a.layers.items() for label, x in by_case.items()]
        names = [Column(text("size"), [size for size, _, _ in rows]), Column(text("case"), [text(l) for _, l, _ in rows])]
        figures = [Column(text("total"), [fmt.num(x.us_per_call) for _, _, x in rows])]
        figures += [Column(text(k), [fmt.num(x.layers[k].us_per_call) if k in x.layers else "-" for _, _, x in rows])
                    for k in layers]
        show_parts(console, "host time per call by layer at each sampled (host-bound) size, us: each layer's share of "
                   "the samples times the case's paired time there", names, [figures], fold_headers=True)
    for size, label, reason in a.unanalysed:
        say(console, f"{fmt.visible(label)} at {size}: no stack analysis: {fmt.visible(reason)}")
    if a.counts:  # --sample counts each case where it samples it
        print_counted({f"{label} at {size}": c for size, by_case in a.counts.items() for label, c in by_case.items()},
                      console, not a.on_gpu, rows="case at size", where=" at each sampled (host-bound) size")
        for size, d in a.count_diffs:
            say(console, f"{fmt.visible(d.head)} against {fmt.visible(d.base)} at {size}:")
            print_count_diff(d, console, notes=a.on_gpu)
    for label, c in a.crossovers.items():
        say(console, f"{fmt.visible(label)}: {c.text}")
    for what, line in fmt.fairness(a, run):
        say(console, f"{what}: {line}")
    for label, r in run.results.items():
        failed = [p for p in r.points if p.error]
        if r.error:
            say(console, f"{fmt.visible(label)}: failed: {fmt.visible(r.error)}")
        for point in failed:
            say(console, f"{fmt.visible(label)} at {a.size_name(point.shape)}: {fmt.visible(point.error)}")
    if not run.complete:
        say(console, "run incomplete: run.json holds what finished")
    say(console, f"run directory: {a.run_dir}")


class TerminalSweep(Renderer[SweepAnalysis]):
    """What `flametool sweep` prints: its tables."""

    name, kind = "terminal", SweepAnalysis

    def render(self, result: SweepAnalysis) -> str:
        return console_text(self.options, lambda console: print_sweep(result, console))
