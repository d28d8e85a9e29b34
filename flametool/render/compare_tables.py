"""What `flametool compare` prints at the end: each pair's answer, the timing and profiled-loop tables, the
counts, the other threads, the layers with each pair's frame deltas, and the hottest lines."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from . import aligned_lines, counted_lines, format as fmt, lines_view
from ..run import perturbation
from ..analyse.compare import Analysis
from ..analyse.attribution import CaseCosts, Skipped
from ..analyse.layers import order
from ..run.counts import Counts
from ..run.profiled import ProfileProcess
from ..run.record import CaseResult, Run
from .base import Renderer
from .diff_tables import layer_key, print_count_diff, print_frame_deltas
from .terminal import (Column, boxless, console_text, fits, fold_labels, fold_paths, header, narrowed_to_fit, narrowest, say, show,
                       show_parts, split_parts, text, titled, unwrapped)
from .terminal import label as terminal_label


def counted_time(prof: ProfileProcess) -> str:
    """The counted loop's host time per call (under tracing) and its ratio to the case's own loops."""
    c = prof.counts
    if c is None or not c.us_per_call:
        return "-"
    own = prof.own_us_per_call
    return fmt.us(c.us_per_call) + (f" ({c.us_per_call / own:.2f}x)" if own else "")


def print_counts(run: Run, console: Console) -> None:
    """Each case's counted loop: per step() call, the CUDA API calls and kernels by name, copies, memsets, device
    allocations and Python calls (exact counts)."""
    counted = {l: r.profile.counts for l, r in run.results.items() if r.profile is not None and r.profile.counts}
    print_counted(counted, console, fmt.run_device(run) == "cpu")


def print_counted(counted: dict[str, Counts], console: Console, cpu_run: bool, rows: str = "case",
                  where: str = "") -> None:
    """The counted loops' table, a row each (`rows`: what a row is, 'case' or 'case at size'; `where`: put after
    the title's 'counted'), then what was not counted (`cpu_run`: once, in a CPU run's words)."""
    if not counted:
        return
    cols, tracers = fmt.counted_columns(counted.values())
    table = titled(f"what one step() call does, counted{where} (exact, per step"
                   + (f"; CUDA API calls and kernels by {', '.join(tracers)})" if tracers else ")"))
    for title in (rows, *(col.title for col in cols)):
        table.add_column(title)
    width = max(20, console.width - 12)  # a name longer than a line is cut in its middle (the JSON has it whole)
    cells = {label: [fmt.count_cell(c, col, "-", short=True, width=width) for col in cols]
             for label, c in counted.items()}
    for label, row in cells.items():
        # a total is flametool's own words and figures ('12 in 5 functions'), a name is the library's: not markup
        table.add_row(terminal_label(label), *(cell if col.cell == "total" else text(cell) for col, cell in zip(cols, row)))
    drawn = (table.box, table.show_edge, table.padding, table.min_width)
    boxless(table)
    narrow = not fits(console, table)  # names wider than their columns: a case per line, wrapped between names
    table.box, table.show_edge, table.padding, table.min_width = drawn
    if narrow:
        say(console, table.title)
        for label, row in cells.items():
            say(console, f"{label}: " + "; ".join(f"{col.title}: {cell}" for col, cell in zip(cols, row)))
    else:
        show(console, table)
    # on the CPU no empty CUDA columns: one line says what a GPU run adds, then what else was not counted
    for m in fmt.counted_notes(counted, not tracers and cpu_run):
        say(console, fmt.visible(m))


def print_other_threads(a: Analysis, console: Console) -> None:
    """Each case's threads other than the caller during its loop: their CPU time per call and where it goes,
    by layer and frame (py-spy's samples of those threads; JAX's workers have their place here)."""
    busy = fmt.busy_threads(a.threads)
    if not busy:
        return
    table = titled("threads other than the caller, during the loop: CPU time per call on them (every thread's "
                   "minus the caller's own, the mean of the loops) and where it goes")
    for col, right in (("case", False), ("CPU / call", True), ("samples", True), ("by layer, us per call", False),
                       ("most own time", False)):
        table.add_column(col, justify="right" if right else "left", overflow="fold")
    for label, t in busy.items():
        c = t.costs
        layers = "; ".join(f"{layer} {f.us_per_call:,.2f}" for layer, f in
                           sorted(c.layers.items(), key=lambda kv: -kv[1].us_per_call)[:4]) if c else \
            fmt.threads_unsampled(a.run.results[label], t)
        top = (f"{c.frames[0].display} {c.frames[0].self.us_per_call:,.2f} us" if c and c.frames else "-")
        table.add_row(terminal_label(label), fmt.us(t.us_per_call), str(t.profile.samples) if t.profile else "-", text(layers),
                      text(top))
    show(console, table)


ALONE = "each case in processes of its own"


def timed_how(run: Run) -> str:
    """How the timing table's cases were timed, in words: together (one paired group), each in processes of its
    own (--isolate: its title said 'with the cases together' of cases never in one process), or together where
    they could share a process (a case that could not was timed alone)."""
    groups = [g for g in run.groups if g.cases]
    if len(run.results) < 2 or all(g.paired for g in groups):
        return "with the cases together"
    return ALONE if not any(g.paired for g in groups) else "with the cases together where they could share a process"


# One line under each table says what its columns are, in words a first reader knows.
def timing_key(gpu: bool, paired: bool = True) -> str:
    """The key under the timing table; `gpu`: the run has GPU times (a CPU run's key says nothing of a GPU);
    `paired`: some cases were timed in the same processes (with --isolate none was: no paired ratio to stand in)."""
    host = ("host (CPU) / call: the host's clock around the loop until its calls return (before any wait for the "
            "GPU), per call" if gpu else "host (CPU) / call: the host's clock around the loop, per call")
    return (host + "; each case's figure is pooled over the processes at the median process's speed"
            + (" (so two cases stand in their paired ratio)" if paired else "") + ", 95% interval in parentheses; "
            + ("GPU / call: the median of every loop's GPU time per call; " if gpu else "")
            + "timed loops: how many, in how many processes; bound: "
            + ("host, the GPU waited for the host's launches (what flametool measures), or device, the host waited "
               "for the GPU" if gpu else "host, the loop's time is the host's own work"))


COUNTED_KEY = "counted: that loop while its calls, kernels and allocations were counted (tracing slows it); "
PROFILED_KEY = ("timed together: the figure above at this shape; alone: the same loop in the profiling process with "
                "no profiler; under cProfile and under py-spy: that loop while profiled, and in parentheses how many "
                "times the alone figure (py-spy's samples are spread by time, so a slower loop keeps the layers' "
                "shares fair); " + COUNTED_KEY + "py-spy samples: the stacks taken inside the loop (why together and "
                "alone differ: docs/glossary.md)")


def profiled_rows(run: Run) -> list[tuple[str, CaseResult]]:
    """The profiled loops' table's rows: each case that ran and was profiled."""
    return [(label, r) for label, r in run.results.items() if not r.error and r.profile is not None]


def profiled_table(a: Analysis, together: bool, narrow: bool) -> Table:
    """The profiled loops, a row per case; `narrow`, for a console too narrow for it: the sampled shape without the
    op (the timing table above names it; a workload's op, 'workload_cases.py:scaled_exp_sum', is one word of 32
    characters) and no counted column where no case was counted (a column of '-'), so that it fits 80 columns (it
    was 82 wide, and 94 for a workload)."""
    run, op = a.run, a.run.config.operation
    rows = profiled_rows(run)
    counted = not narrow or any(counted_time(r.profile) != "-" for _, r in rows if r.profile is not None)
    profiling = titled("profiled loops: each case alone in a process of its own, at the sampled shape, us per call")
    for col, right in (("case", False), ("sampled at", False), ("timed together" if together else "timed", True),
                       ("alone", True), ("under cProfile", True), ("counted", True), ("under py-spy", True), ("py-spy samples", True)):
        if col != "counted" or counted:
            profiling.add_column(col, justify="right" if right else "left")
    for label, r in rows:
        prof, s = r.profile, r.sampling
        assert prof is not None  # rows has only the profiled cases
        at = a.sample_timings.get(label)
        profiling.add_row(
            terminal_label(label), text(fmt.shape(r.sample_shape) if narrow else fmt.op_shape(op, r.sample_shape)),
            fmt.us(at.cpu_us if at else None), fmt.us(prof.own_us_per_call),
            f"{fmt.us(prof.cprofile_us_per_call)} ({prof.cprofile_inflation:.2f}x)" if prof.cprofile_inflation else "-",
            *([counted_time(prof)] if counted else []),
            f"{fmt.us(s.sampled_us_per_call)} ({prof.slowdown:.2f}x)" if s and prof.slowdown else "-",
            f"{s.analysed_samples} at {s.rate_hz} Hz" if s else "-",
        )
    return profiling


def print_summary(a: Analysis, console: Console) -> None:
    """The headline (each pair's paired ratio and difference with intervals), the cases' timings, the
    profiled loops, and what to be careful about."""
    run = a.run
    processes = run.config.timing_processes
    for e in run.environments:
        say(console, fmt.environment_line(e))
    on_cpu = fmt.run_device(run) == "cpu"
    for p in a.pairs:  # the answer first: each pair's ratio and difference, then what a step does, counted
        for line in fmt.pair_lines(p, run, processes):
            say(console, line)
        print_count_diff(p.counts, console, notes=not on_cpu)  # a CPU run says once, below, what it cannot count
    note = fmt.speed_note(a.pairs)
    if note:
        say(console, note)

    op = run.config.operation
    started = run.process_starts()
    how = ("processes forked from one that imported the libraries" if started == {"forked"} else
           "fresh and forked processes" if "forked" in started else "fresh processes")
    timed = timed_how(run)
    together = timed != ALONE  # with --isolate no two cases' figures were had in one process
    timing = titled(f"time per call, as timed {timed} in {how}" if together else
                    f"time per call, as timed in {how}, {timed}")
    # a run on the CPU has no GPU time: no column for it, and no word of it in the key
    gpu = any(t is not None and t.gpu_us is not None for t in a.timings.values())
    for col, right in (("case", False), ("dtype", False), ("shape", False), ("host (CPU) / call", True),
                       ("GPU / call", True), ("timed loops", True), ("bound", False)):
        if col != "GPU / call" or gpu:
            timing.add_column(col, justify="right" if right else "left")
    for label, r in run.results.items():
        t = a.timings.get(label)
        if r.error or t is None:
            timing.add_row(terminal_label(label), text(r.dtype), text(fmt.op_shape(op, r.shape)), "failed" if r.error else "-",
                           *[""] * (len(timing.columns) - 4))
            continue
        assert r.timing is not None  # t is made from it
        timing.add_row(
            terminal_label(label), text(r.dtype), text(fmt.op_shape(op, r.shape)),
            fmt.us(t.cpu_us) + (f" ({fmt.interval(t.interval, fmt.us_bare)})" if t.interval else ""),
            *([fmt.us(t.gpu_us)] if gpu else []), f"{len(t.loops)} in {t.processes} process{'' if t.processes == 1 else 'es'}",
            "host" if r.timing.host_bound else "device",
        )
    show(console, timing)
    say(console, timing_key(gpu, paired=together))

    profiling = profiled_table(a, together, narrow=False)
    if narrowest(console, profiling) > console.width:
        profiling = profiled_table(a, together, narrow=True)
        # long names folded narrower than a timing table's: eight cases, four long-named, drew it 85 wide at 80
        fold_labels(console, profiling, [label for label, _ in profiled_rows(run)])
    show(console, profiling)
    key = PROFILED_KEY if "counted" in [str(c.header) for c in profiling.columns] else PROFILED_KEY.replace(COUNTED_KEY, "")
    say(console, key if together else "timed" + key.removeprefix("timed together"))
    print_counts(run, console)
    counted_lines.print_tables(a, console)
    print_other_threads(a, console)

    for what, line in fmt.fairness(a, run):
        say(console, f"{what}: {line}")
    for label, r in run.results.items():
        name = fmt.visible(label)
        if r.error:
            say(console, (f"{name}: failed: {fmt.visible(r.error)}"))
            continue
        group = run.group_of(label)
        if group is not None and not group.paired and len(run.results) > 1:
            say(console, (f"{name}: {fmt.visible(group.reason)}"))
        if r.timing and not r.timing.host_bound:
            say(console, (f"{name}: {r.timing.bound_note}"))
        if r.sample_shape != r.shape and r.sample_shape_reason:
            say(console, (f"{name}: {r.sample_shape_reason}"))
        s = r.sampling
        if s and not s.complete:
            say(console, (f"{name}: sampling incomplete: {fmt.visible(s.error or '')}"))
        elif s:
            assert r.profile is not None  # s is its sampling
            advice = perturbation.perturbation_advice(s, r.profile.slowdown, run.config.pool_threads,
                                                 run.config.sample_seconds or s.seconds)
            if advice:
                why = (f"py-spy fell {s.behind_seconds:.1f} s behind" if s.behind
                       else f"sampling slowed the loop {r.profile.slowdown:.2f}x")
                say(console, (f"{name}: {why} at {s.rate_hz} Hz (shares stay fair); {advice}"))
    if not run.complete:
        say(console, ("run incomplete: run.json holds what finished"))
    say(console, (f"run directory: {a.run_dir}"))


def print_layers(a: Analysis, console: Console, top: int = 10, view: str = "caller") -> None:
    """Host time per call by layer, side by side for every analysed case with a column per compared pair,
    then, for each pair, the frames that differ most. `view`: "caller" charges a system library (libc,
    malloc, locks) to the layer that called it, "library" keeps it as a layer of its own."""
    analysis, diffs = a.view(view)  # a completed analysis holds each view (Analysis.views)
    done = {l: x for l, x in analysis.items() if isinstance(x, CaseCosts)}
    for label, x in analysis.items():
        if isinstance(x, Skipped):
            say(console, (f"{fmt.visible(label)}: no stack analysis: {fmt.visible(x.reason)}"))
    if not done:
        return
    layers = order({l for x in done.values() for l in x.layers})
    deltas = [{r.layer: r for r in d.layers} for d in diffs]
    columns, pairs = [], []
    for label, x in done.items():
        cells: list[Text | str] = [fmt.pm(f.us_per_call, f.se_us) if (f := x.layers.get(layer)) else "-"
                                   for layer in layers]
        columns.append(Column(header(label), [*cells, fmt.num(x.us_per_call)]))
    for d, by_layer in zip(diffs, deltas):
        cells = [fmt.pm(fmt.shown_delta(r.base_us_per_call, r.head_us_per_call), r.delta_se_us, sign=True)
                 if (r := by_layer.get(layer)) else "-" for layer in layers]
        total = fmt.signed(fmt.shown_delta(d.base_us_per_call, d.head_us_per_call))
        pairs.append(Column(header(f"{d.head} - {d.base}"), [*cells, total]))
    first = Column("layer", [*(text(layer) for layer in layers), Text("total (measured)")])
    show_parts(console, "host time per call by layer, us", first, [columns, pairs], ends={len(layers)})
    say(console, layer_key(view, timed_how(a.run) != ALONE))
    for d in diffs:
        if d.at_speed:
            say(console, f"{fmt.visible(d.head)} - {fmt.visible(d.base)}: {fmt.visible(d.at_speed)}")
    for label, x in done.items():
        c = x.closure
        flag = "" if c.within_tolerance else f" (outside {c.tolerance:.0%}: samples were lost)"
        libc = x.called_from.get("C library/allocator") or {}
        callers = ", ".join(f"{k} {v:,.2f}" for k, v in list(libc.items())[:3])
        say(console, (f"{fmt.visible(label)}: {fmt.closure_sentence(x)}{flag}"
                           + (f"; C library called from: {callers}" if callers else "")))
    for d in diffs:
        print_frame_deltas(d, console, top)


def print_lines(a: Analysis, console: Console) -> None:
    """Each sampled case's step() lines and hottest lines (render/lines_view.py chooses and writes them)."""
    rows = lines_view.terminal_rows(a)
    if not rows:
        return
    table = titled(lines_view.TERMINAL_TITLE)
    texts = any(r.code for r in rows)  # a run recorded before lines were kept has none: no column for them
    for col, right in (("case", False), ("line", False), ("code", False), ("self", True), ("total", True)):
        if col != "code" or texts:
            table.add_column(col, justify="right" if right else "left", overflow="ellipsis" if col == "code" else "fold")
    for r in rows:  # a line without samples (a step's def line) greyed, as the report greys it
        table.add_row(Text(r.case), text(r.where), *([text(r.code)] if texts else []), r.self, r.total,
                      style=None if r.sampled else "dim")
    fold_paths(console, table, 1)
    if narrowest(console, table) > console.width:  # long case names: folded narrower, as the profiled loops' are
        fold_labels(console, table, [r.case.replace("\n", "") for r in rows])
    show(console, table)
    say(console, lines_view.TERMINAL_KEY + (lines_view.DEF_KEY if not all(r.sampled for r in rows) else ""))
    # a pair's lines that differ most, here where the aligned table (print_aligned says them under it) has not its
    # cases: two --env builds of a case of one's own had theirs in summary and the report only
    for pair, sentences in lines_view.pair_sentences(a, lambda base, head: not aligned_lines.in_table(a, base, head)):
        say(console, f"{pair}, the lines that differ most:")
        for line in sentences:
            say(console, f"  {line}")


CODE_FOLD = 12  # the aligned lines' code is folded at its words no narrower than this before a figure is left out


def fold_words(code: str, width: int) -> str:
    """A line's code over lines of at most `width` characters, broken at its spaces (a word longer, at the width)."""
    return fmt.folded(code, width, " ", anywhere=True)


def aligned_parts(got: aligned_lines.AlignedView, console: Console) -> None:
    """The aligned lines in parts (terminal.show_parts), each headed by the line and its code, a case's columns
    never apart; the code folded at its words to the widest that takes no more parts than at CODE_FOLD."""
    fields = len(got.groups[0].headers)
    cases = [Column(header(g.label, h, under=True), [text(r.cells[i][j]) for r in got.rows])
             for i, g in enumerate(got.groups) for j, h in enumerate(g.headers)]
    ends = {len(got.rows) - 2} if len(got.rows) > 1 and got.rows[-2].kind == "line" else set()
    line = Column("line", [text(r.line) for r in got.rows], "right")
    whole = [text(r.code) for r in got.rows]
    code = Table()  # narrowed_to_fit folds this column's cells; each try is split into parts
    code.add_column("code")
    for cell in whole:
        code.add_row(cell)

    def names() -> list[Column]:
        return [line, Column("code", list(code.columns[0]._cells), "left", no_wrap=True)]  # type: ignore[arg-type]

    def count() -> int:
        return len(split_parts(console, names(), [cases], ends, fields))

    code.columns[0]._cells = [Text(fold_words(c.plain, CODE_FOLD)) for c in whole]
    fewest = count()
    code.columns[0]._cells = list(whole)
    narrowed_to_fit(console, code, 0, fold_words, CODE_FOLD, lambda: count() <= fewest)
    show_parts(console, got.title, names(), [cases], ends, fields)


def print_aligned(a: Analysis, console: Console) -> None:
    """The step lines the cases share, a column group per case (render/aligned_lines.py), as much of it as fits
    the console (every figure; one count; total us and one count; without ±: it says which), then each pair's
    lines that differ most. Nothing for a run whose cases share no step line."""
    if a.aligned is None:
        return
    in_parts = False
    for fields, spread, left in aligned_lines.narrowed(a.aligned):
        got = aligned_lines.view(a.aligned, fields, spread, short=True)
        table = titled(got.title)
        table.add_column("line", justify="right")
        table.add_column("code", no_wrap=True)  # folded at its words below, never cut by rich
        for g in got.groups:
            for h in g.headers:
                # a long name folded (header) as every table's: whole, it drew the table 340 wide
                table.add_column(header(g.label, h, under=True), justify="right")
        for r in got.rows:
            table.add_row(text(r.line), text(r.code), *(text(c) for cells in r.cells for c in cells),
                          end_section=r.kind == "line" and r is got.rows[-2])

        def drawn(table: Table = table) -> bool:  # no figure wrapped, boxed or else without the box, as show() draws
            if unwrapped(console, table):
                return True
            boxless(table)
            return unwrapped(console, table)

        # the code folded at its words, as narrow as CODE_FOLD, before a figure is left out: cut to 12 characters
        # it read 'def step(a,…' and 'return xp.s…' with five cases at 80 columns
        if narrowed_to_fit(console, table, 1, fold_words, CODE_FOLD, drawn):
            break
    else:
        # nothing fits unwrapped (five cases at 80): the narrowest table, each case's column as wide as the figures
        # of its lines, its header and the step's sum wrapped at their words where they must; the code folded into
        # the width left (at CODE_FOLD it had wrapped over four lines beside columns wider than their figures)
        for column in table.columns[2:]:
            lines = column._cells[:-1]  # the last row is the step's sum
            column.min_width = max((c.cell_len for c in lines if isinstance(c, Text)), default=0)
        table.columns[1]._cells = [text(r.code) for r in got.rows]  # whole again: folded above at CODE_FOLD
        in_parts = not narrowed_to_fit(console, table, 1, fold_words, CODE_FOLD)  # eight cases at 80: 143 wide
    if in_parts:  # too many cases for any one table: in parts, each headed by the lines
        aligned_parts(got, console)
    else:
        show(console, table)
    say(console, aligned_lines.KEY.format(dash=fmt.DASH) + (f"; {left}{aligned_lines.WIDER}" if left else ""))
    for line in got.notes:
        say(console, line)
    for pair, sentences in aligned_lines.pair_sentences(a):
        say(console, f"{pair}, the lines that differ most:")
        for line in sentences:
            say(console, f"  {line}")


class TerminalCompare(Renderer[Analysis]):
    """What `flametool compare` prints at the end: the pairs, the timings, the layers and the frame deltas."""

    name, kind = "terminal", Analysis

    def render(self, result: Analysis) -> str:
        def draw(console: Console) -> None:
            print_summary(result, console)
            print_layers(result, console, view=self.options.view)
            print_lines(result, console)
            print_aligned(result, console)

        return console_text(self.options, draw)
