"""Terminal output: the live progress line while cases run, and the summary at the end. Every name printed
here may come from another machine's run directory: it goes through format.visible first."""

from __future__ import annotations

import io
import time
from typing import Callable


from rich import box
from rich.console import Console
from rich.status import Status
from rich.table import Table
from rich.text import Text

from . import format as fmt, lines_view
from ..run import counts, perturbation
from ..analyse import countdiff, sweep
from . import aligned_lines, counted_lines
from ..analyse.compare import Analysis
from ..analyse.diff import DiffResult
from ..analyse.attribution import CaseCosts, Skipped
from ..analyse.treediff import PairDiff
from ..analyse.sweep import SweepAnalysis
from ..analyse.atlas import AtlasAnalysis
from ..analyse.layers import order
from .base import Options, Renderer


def text(value: object) -> Text:
    """A table cell or line of untrusted text: controls made visible, no markup read from it."""
    return Text(fmt.visible(value))


def say(console: Console, line: object, **kwargs) -> None:
    """Print one line of untrusted text (an error naming a path or a label)."""
    console.print(text(line), highlight=False, **kwargs)


def show(console: Console, table: Table) -> None:
    """Print a table whole. Where the console is narrower than the table, rich narrows columns below their
    longest word and cuts words to '…', figures too ('3.… us'); so then the table is drawn without its box,
    and where that is still wider than the console, on a console just wide enough for every column to keep
    its longest word (the terminal wraps the lines: a figure is never cut)."""
    if table.min_width and table.min_width > console.width:  # a title wider than the console: rich would squeeze
        table.min_width = console.width  # the columns below their words to keep the width the title asked for
    if fits(console, table):
        console.print(table)
        return
    boxless(table)
    width = console.width  # print(width=) is clamped to the console's: widen the console itself, for this table
    try:
        if not fits(console, table):
            low, high = width, width + table.__rich_measure__(console, console.options.update_width(1 << 20)).maximum
            while low < high:  # the narrowest console that draws every word whole
                console.width = (low + high) // 2
                low, high = (low, console.width) if fits(console, table) else (console.width + 1, high)
            console.width = low
        console.print(table)
    finally:
        console.width = width


def boxless(table: Table) -> None:
    """A table drawn without its box and edge, one space between columns: the narrowest rich draws."""
    table.box, table.show_edge, table.padding, table.min_width = box.SIMPLE_HEAD, False, (0, 1, 0, 0), None


def fits(console: Console, table: Table) -> bool:
    """Whether rich draws every column of `table` at least as wide as its longest word (header included) at the
    console's width: else it would cut words and figures ('timed togeth…', '3.… us'). Read off the widths rich
    itself would draw (the table's own measure and its drawn widths differ by a column or two)."""
    unbounded = console.options.update_width(1 << 20)
    kept, table.min_width = table.min_width, None  # the width kept for a title (titled) may be wrapped
    try:
        widths = table._calculate_column_widths(console, console.options.update_width(console.width - table._extra_width))
        need = [table._measure_column(console, unbounded, column).minimum for column in table.columns]
    finally:
        table.min_width = kept
    return all(w >= n for w, n in zip(widths, need))


def fit_names(console: Console, table: Table, index: int, shortest: int = 20) -> None:
    """Column `index` of names (frames, kernels) on one line each: where the table is wider than the console, each
    name is cut in its middle (format.middle) to the widest that lets the table fit, never below `shortest`
    characters; a name is never broken over lines."""
    column = table.columns[index]
    column.overflow, column.no_wrap = "ellipsis", True
    names = [c.plain if isinstance(c, Text) else str(c) for c in column._cells]

    drawn = (table.box, table.show_edge, table.padding, table.min_width)

    def fits_at(limit: int) -> bool:  # boxed, or else without the box (as show() would draw it)
        column._cells = [Text(fmt.middle(n, limit)) for n in names]
        table.box, table.show_edge, table.padding, table.min_width = drawn
        if fits(console, table):
            return True
        boxless(table)
        ok = fits(console, table)
        table.box, table.show_edge, table.padding, table.min_width = drawn
        return ok

    longest = max(map(len, names), default=0)
    if longest <= shortest or fits_at(longest):
        return
    low, high = shortest, longest  # the widest limit that fits, by halves
    while low < high:
        mid = (low + high + 1) // 2
        low, high = (mid, high) if fits_at(mid) else (low, mid - 1)
    fits_at(low)


def titled(title: str) -> Table:
    """A table at least as wide as its title, so a long title is not folded over a narrow table."""
    title = fmt.visible(title)
    return Table(title=Text(title), title_justify="left", min_width=len(title))


PROGRESS = ("auto", "bar", "lines", "all", "none")
EVERY_SECONDS = 10.0  # lines: the phase now, at least this often while it lasts


class Progress:
    """What is running, as `--progress` asks: a spinner line in a terminal (bar), plain lines for a log (lines: a
    line per phase of each process, and the current one every EVERY_SECONDS while a phase lasts; all: a line for
    every update), or nothing
    (none); auto: bar in a terminal, else lines. `settled`: called once with the labels' first change from
    timing to profiling (the timing is done: compare prints its headline then, before the profiling)."""

    def __init__(self, console: Console, mode: str = "auto", settled: Callable[[], None] | None = None) -> None:
        self.console = console
        self.mode = ("bar" if console.is_terminal else "lines") if mode == "auto" else mode
        self.status: Status | None = None
        self.settled, self.timing = settled, False
        self.phase: tuple[str, str] | None = None
        self.said = 0.0  # when the last line was written (lines)

    def __enter__(self) -> "Progress":
        if self.mode == "bar":
            self.status = self.console.status("starting")
            self.status.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        if self.status is not None:
            self.status.__exit__(*exc)

    def update(self, label: str, what: str) -> None:
        timing = label.startswith("timing ")
        if self.timing and not timing and self.settled is not None:
            settled, self.settled = self.settled, None
            if self.status is not None:
                self.status.stop()  # the headline is printed above the spinner, not through it
            settled()
            if self.status is not None:
                self.status.start()
        self.timing = self.timing or timing
        line = text(f"{label}: {what}")
        if self.mode == "none":
            return
        if self.status is not None:
            self.status.update(line)
            return
        now = time.monotonic()
        phase = (label, phase_of(what))
        if self.mode == "all" or phase != self.phase or now - self.said >= EVERY_SECONDS:
            self.phase, self.said = phase, now
            self.console.print(line, highlight=False)


def phase_of(what: str) -> str:
    """The phase an update belongs to, for a log's one line per phase: a timing process ('process 2/5: ...' ->
    'process 2/5'), or a case's profiling process: getting ready (import, set-up, warm-up, its own timed loops),
    the cProfile loop, sampling, counting."""
    if what.startswith("process "):
        return what.partition(":")[0]
    for word in ("cProfile", "sampling", "count"):
        if what.startswith(word):
            return word
    return "getting ready"


def counted_time(prof) -> str:
    """The counted loop's host time per call (under tracing) and its ratio to the case's own loops."""
    c = prof.counts
    if c is None or not c.us_per_call:
        return "-"
    own = prof.own_us_per_call
    return fmt.us(c.us_per_call) + (f" ({c.us_per_call / own:.2f}x)" if own else "")


def print_counts(run, console: Console) -> None:
    """Each case's counted loop: per step() call, the CUDA API calls and kernels by name, copies, memsets, device
    allocations and Python calls (exact counts)."""
    counted = {l: r.profile.counts for l, r in run.results.items() if r.profile is not None and r.profile.counts}
    if not counted:
        return
    cols, tracers = fmt.counted_columns(counted.values())
    table = titled("what one step() call does, counted (exact, per step"
                   + (f"; CUDA API calls and kernels by {', '.join(tracers)})" if tracers else ")"))
    for title in ("case", *(col.title for col in cols)):
        table.add_column(title)
    width = max(20, console.width - 12)  # a name longer than a line is cut in its middle (the JSON has it whole)
    cells = {label: [fmt.count_cell(c, col, "-", short=True, width=width) for col in cols]
             for label, c in counted.items()}
    for label, row in cells.items():
        # a total is flametool's own words and figures ('12 in 5 functions'), a name is the library's: not markup
        table.add_row(text(label), *(cell if col.cell == "total" else text(cell) for col, cell in zip(cols, row)))
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
    if not tracers and fmt.run_device(run) == "cpu":  # no empty CUDA columns: one line says what a GPU run adds
        say(console, fmt.GPU_COUNTS)
        return
    for m in dict.fromkeys(m for c in counted.values() for m in c.missing):
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
            fmt.threads_unsampled(a.run.results[label])
        top = (f"{c.frames[0].display} {c.frames[0].self.us_per_call:,.2f} us" if c and c.frames else "-")
        table.add_row(text(label), fmt.us(t.us_per_call), str(t.profile.samples) if t.profile else "-", text(layers),
                      text(top))
    show(console, table)


# One line under each table says what its columns are, in words a first reader knows.
def timing_key(gpu: bool) -> str:
    """The key under the timing table; `gpu`: the run has GPU times (a CPU run's key says nothing of a GPU)."""
    host = ("host (CPU) / call: the host's clock around the loop until its calls return (before any wait for the "
            "GPU), per call" if gpu else "host (CPU) / call: the host's clock around the loop, per call")
    return (host + "; each case's figure is pooled over the processes at the median process's speed (so two cases "
            "stand in their paired ratio), 95% interval in parentheses; "
            + ("GPU / call: the median of every loop's GPU time per call; " if gpu else "")
            + "timed loops: how many, in how many processes; bound: "
            + ("host, the GPU waited for the host's launches (what flametool measures), or device, the host waited "
               "for the GPU" if gpu else "host, the loop's time is the host's own work"))
PROFILED_KEY = ("timed together: the figure above at this shape; alone: the same loop in the profiling process with "
                "no profiler; under cProfile and under py-spy: that loop while profiled, and in parentheses how many "
                "times the alone figure (py-spy's samples are spread by time, so a slower loop keeps the layers' "
                "shares fair); counted: that loop while its calls, kernels and allocations were counted (tracing "
                "slows it); py-spy samples: the stacks taken inside the loop (why together and alone differ: docs/glossary.md)")


def layer_key(view: str) -> str:
    """The key under a layer table."""
    system = ("the C library, allocator and locks are counted in the layer that called them (--layers library "
              "lists them as a layer of their own)" if view == "caller"
              else "the C library, allocator and locks as a layer of their own")
    return ("each case's time per call (timed together) split by its share of py-spy samples in each layer; ± one "
            "standard error from the number of samples; " + system + "; the layers' names (ATen glue, loop): "
            "docs/glossary.md")


FRAME_KEY = ("self: time in the frame's own code; total: with the frames it calls; diff: {head} minus {base} (+: "
             "{head} spends more), ± one standard error from the number of samples")


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
        print_count_diff(p.counts, console, notes=not on_cpu)  # a CPU run's one line on what it cannot count is below
    note = fmt.speed_note(a.pairs)
    if note:
        say(console, note)

    op = run.config.operation
    timing = titled("time per call, as timed with the cases together in fresh processes")
    # a run on the CPU has no GPU time: no column for it, and no word of it in the key
    gpu = any(t is not None and t.gpu_us is not None for t in a.timings.values())
    for col, right in (("case", False), ("dtype", False), ("shape", False), ("host (CPU) / call", True),
                       ("GPU / call", True), ("timed loops", True), ("bound", False)):
        if col != "GPU / call" or gpu:
            timing.add_column(col, justify="right" if right else "left")
    for label, r in run.results.items():
        t = a.timings.get(label)
        if r.error or t is None:
            timing.add_row(text(label), text(r.dtype), text(fmt.op_shape(op, r.shape)), "failed" if r.error else "-",
                           *[""] * (len(timing.columns) - 4))
            continue
        assert r.timing is not None  # t is made from it
        timing.add_row(
            text(label), text(r.dtype), text(fmt.op_shape(op, r.shape)),
            fmt.us(t.cpu_us) + (f" ({fmt.interval(t.interval)})" if t.interval else ""),
            *([fmt.us(t.gpu_us)] if gpu else []), f"{len(t.loops)} in {t.processes} process{'' if t.processes == 1 else 'es'}",
            "host" if r.timing.host_bound else "device",
        )
    show(console, timing)
    say(console, timing_key(gpu))

    profiling = titled("profiled loops: each case alone in a process of its own, at the sampled shape, us per call")
    for col, right in (("case", False), ("sampled at", False), ("timed together", True), ("alone", True),
                       ("under cProfile", True), ("counted", True), ("under py-spy", True), ("py-spy samples", True)):
        profiling.add_column(col, justify="right" if right else "left")
    for label, r in run.results.items():
        if r.error or r.profile is None:
            continue
        prof, s = r.profile, r.sampling
        at = a.sample_timings.get(label)
        profiling.add_row(
            text((label)), text(fmt.op_shape(op, r.sample_shape)), fmt.us(at.cpu_us if at else None),
            fmt.us(prof.own_us_per_call),
            f"{fmt.us(prof.cprofile_us_per_call)} ({prof.cprofile_inflation:.2f}x)" if prof.cprofile_inflation else "-",
            counted_time(prof),
            f"{fmt.us(s.sampled_us_per_call)} ({prof.slowdown:.2f}x)" if s and prof.slowdown else "-",
            f"{s.analysed_samples} at {s.rate_hz} Hz" if s else "-",
        )
    show(console, profiling)
    say(console, PROFILED_KEY)
    print_counts(run, console)
    counted_lines.print_tables(a, console)
    print_other_threads(a, console)

    for line in fmt.unlike_lines(a.unlike, fmt.run_device(run), run.config.operation,
                                 [(p.base, p.head) for p in a.pairs]):
        say(console, f"operands differ: {line}")
    if a.new_outputs:
        say(console, f"outputs differ: {fmt.outputs_sentence(a.new_outputs)}")
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
    analysis, diffs = a.view(view)
    done = {l: x for l, x in analysis.items() if isinstance(x, CaseCosts)}
    for label, x in analysis.items():
        if isinstance(x, Skipped):
            say(console, (f"{fmt.visible(label)}: no stack analysis: {fmt.visible(x.reason)}"))
    if not done:
        return
    table = titled("host time per call by layer, us")
    table.add_column("layer")
    for label in done:
        table.add_column(text(label), justify="right")
    for d in diffs:
        table.add_column(text(f"{d.head} - {d.base}"), justify="right")
    deltas = [{r.layer: r for r in d.layers} for d in diffs]
    for layer in order({l for x in done.values() for l in x.layers}):
        row: list[Text | str] = [text(layer)]
        for x in done.values():
            f = x.layers.get(layer)
            row.append(fmt.pm(f.us_per_call, f.se_us) if f is not None else "-")
        for by_layer in deltas:
            delta = by_layer.get(layer)
            row.append(fmt.pm(fmt.shown_delta(delta.base_us_per_call, delta.head_us_per_call), delta.delta_se_us,
                              sign=True) if delta else "-")
        table.add_row(*row)
    row = [Text("total (measured)")] + [fmt.num(x.us_per_call) for x in done.values()]
    row += [fmt.signed(fmt.shown_delta(d.base_us_per_call, d.head_us_per_call)) for d in diffs]
    table.add_row(*row, end_section=True)
    show(console, table)
    say(console, layer_key(view))
    for d in diffs:
        if d.at_speed:
            say(console, f"{fmt.visible(d.head)} - {fmt.visible(d.base)}: {fmt.visible(d.at_speed)}")
    for label, x in done.items():
        c = x.closure()
        flag = "" if c.within_tolerance else f" (outside {c.tolerance:.0%}: samples were lost)"
        libc = x.called_from.get("C library/allocator") or {}
        callers = ", ".join(f"{k} {v:,.2f}" for k, v in list(libc.items())[:3])
        say(console, (f"{fmt.visible(label)}: {fmt.closure_sentence(x)}{flag}"
                           + (f"; C library called from: {callers}" if callers else "")))
    for d in diffs:
        print_frame_deltas(d, console, top)


def print_frame_deltas(case_diff: PairDiff, console: Console, top: int = 10) -> None:
    head, base = fmt.visible(case_diff.head), fmt.visible(case_diff.base)
    table = titled(f"frames that differ most ({head} - {base}), us per call")
    table.add_column("frame")
    table.add_column("layer")
    two = "\n" if console.width < 100 else " "  # a narrow terminal: the figures' headers on two lines, for the names
    for col in (f"{base}{two}self", f"{head}{two}self", f"diff{two}self", f"diff{two}total"):
        table.add_column(col, justify="right", no_wrap=True)
    changed = [r for r in case_diff.frames if r.delta_us_per_call or r.delta_total_us_per_call]
    if not changed:
        say(console, ("no frame differs"))
        return
    for r in changed[:top]:
        table.add_row(text((r.display)), r.layer_label or r.layer, fmt.num(r.base_self_us_per_call),
                      fmt.num(r.head_self_us_per_call),
                      fmt.pm(fmt.shown_delta(r.base_self_us_per_call, r.head_self_us_per_call), r.delta_se_us,
                             sign=True),
                      fmt.signed(r.delta_total_us_per_call))
    fit_names(console, table, 0)
    show(console, table)
    say(console, FRAME_KEY.format(head=head, base=base) + (fmt.ROLE_KEY if any(r.role for r in changed) else ""))


def print_count_diff(d: "countdiff.CountDiff | None", console: Console, notes: bool = True) -> None:
    """What a step does on each side, counted (exact), indented under the headline it belongs to."""
    for line in countdiff.lines(d, notes):
        say(console, f"  counted: {line}")


def print_run_diff(result: DiffResult, console: Console, top: int = 10, view: str = "caller") -> None:
    """`flametool diff`: one case in two runs, or two cases of one run (result.cases)."""
    case_diff, cases = result.figures, result.cases
    where = f"in {result.base_run}" if cases else f"base {result.base_run}, head {result.head_run}"
    if not cases:
        say(console, f"A (base): {result.base_run}; B (head): {result.head_run}")
    for note in (fmt.differences_text(result.differences), fmt.incomplete_text(result.incomplete)):
        if note:
            say(console, fmt.visible(note))
    for line in fmt.change_lines(result.change, result.label, cases):
        say(console, line)
    print_count_diff(result.counts, console)
    if case_diff is None:
        say(console, result.not_sampled or "no stacks to compare")
        return
    table = titled(f"{fmt.visible(result.label)}: host time per call by layer, us ({fmt.visible(where)})")
    base, head = cases or ("base", "head")
    for i, col in enumerate(("layer", base, head, f"{head} - {base}")):
        table.add_column(text(col), justify="left" if i == 0 else "right")
    for r in case_diff.layers:
        table.add_row(text(r.layer), fmt.num(r.base_us_per_call), fmt.num(r.head_us_per_call),
                      fmt.pm(fmt.shown_delta(r.base_us_per_call, r.head_us_per_call), r.delta_se_us, sign=True))
    table.add_row(Text("total (measured)"), fmt.num(case_diff.base_us_per_call), fmt.num(case_diff.head_us_per_call),
                  fmt.signed(fmt.shown_delta(case_diff.base_us_per_call, case_diff.head_us_per_call)))
    show(console, table)
    say(console, layer_key(view))
    if case_diff.at_speed:
        say(console, fmt.visible(case_diff.at_speed))
    print_frame_deltas(case_diff.named(base, head), console, top)
    print_line_deltas(result.lines or [], console, base, head)
    if not result.same_shape_and_dtype:
        say(console, ("note: the two cases were sampled at different shapes or dtypes" if cases
                      else "note: the two runs sampled this case at different shapes or dtypes"))



def print_sweep(a: SweepAnalysis, console: Console) -> None:
    """A sweep: per size, each case's host, GPU and wall time per call; per pair, the wall-time ratio and the
    extra host time in it; each case's crossover."""
    run = a.run
    # a CPU sweep has no GPU times and every size is the host's: no GPU or bound columns
    cols = ("host", "GPU", "wall", "bound") if a.on_gpu else ("host", "wall")
    table = titled(f"{run.config.operation}: " + (
                   "time per call at each size: host (CPU), GPU and wall (to the sync after the loop), median of "
                   "every loop; bound: host, the GPU waited on the host's launches, or GPU, the host waited on the GPU"
                   if a.on_gpu else
                   "time per call at each size on the CPU, which does all the work: host clock around the loop and "
                   "wall (to the end of the loop), median of every loop"))
    table.add_column("size")
    for label in a.curves:
        for col in cols:
            table.add_column(f"{fmt.visible(label)} {col}", justify="right" if col != "bound" else "left")
    for shape in a.shapes:
        row = [sweep.size_name(shape)]
        for label in a.curves:
            p = a.at(label, shape)
            if p is None or p.cpu_us is None:
                row += ["failed" if p is not None and p.error else "-"] + [""] * (len(cols) - 1)
                continue
            shown = {"host": fmt.us(p.cpu_us), "GPU": fmt.us(p.gpu_us), "wall": fmt.us(p.wall_us),
                     "bound": "host" if p.host_bound else "GPU"}
            row += [shown[c] for c in cols]
        table.add_row(*row)
    show(console, table)
    for sp in a.pairs:
        t = titled(f"{sp.head} against {sp.base}: wall time per call, " + ("paired" if sp.paired else "not paired")
                   + "; extra host: the slower case's host time beyond the other's, and the share of its wall time "
                     "that shows it")
        for col in ("size", "wall ratio (95%)", "wall difference", "slower", "extra host", "share of wall"):
            t.add_column(col, justify="left" if col in ("size", "slower") else "right")
        for pp in sp.points:
            w = pp.wall
            if w is None or w.ratio is None:
                t.add_row(sweep.size_name(pp.shape), "-", "", "", "", "")
                continue
            assert w.diff_us is not None  # a ratio comes with its difference
            iv = f" ({fmt.interval(w.ratio_interval, lambda v: f'{v:.3f}')})" if w.ratio_interval else ""
            ratio = "inconclusive" if sweep.side(pp) is None else fmt.ratio(w.ratio)  # the interval says nothing
            t.add_row(sweep.size_name(pp.shape), ratio + iv, fmt.signed(w.diff_us) + " us", text(pp.slower),
                      fmt.us(pp.extra_host_us), f"{pp.share:.0%}" if pp.share is not None else "-")
        show(console, t)
        for line in fmt.sweep_pair_lines(sp, run.config.timing_processes):
            say(console, line)
    if a.layers:
        layers = order({k for by_case in a.layers.values() for x in by_case.values() for k in x.layers})
        t = titled("host time per call by layer at each sampled (host-bound) size, us: each layer's share of the "
                   "samples times the case's paired time there")
        for col in ("size", "case", "total", *layers):
            t.add_column(text(col), justify="left" if col in ("size", "case") else "right")
        for size, by_case in a.layers.items():
            for label, x in by_case.items():
                t.add_row(size, text(label), fmt.num(x.us_per_call),
                          *[fmt.num(x.layers[k].us_per_call) if k in x.layers else "-" for k in layers])
        show(console, t)
    for label, c in a.crossovers.items():
        say(console, f"{fmt.visible(label)}: {c.text}")
    for line in fmt.unlike_lines(a.unlike, fmt.run_device(run), run.config.operation,
                                 [(p.base, p.head) for p in a.pairs]):
        say(console, f"operands differ: {line}")
    if a.new_outputs:
        say(console, f"outputs differ: {fmt.outputs_sentence(a.new_outputs)}")
    for label, r in run.results.items():
        failed = [p for p in r.points if p.error]
        if r.error:
            say(console, f"{fmt.visible(label)}: failed: {fmt.visible(r.error)}")
        for point in failed:
            say(console, f"{fmt.visible(label)} at {sweep.size_name(point.shape)}: {fmt.visible(point.error)}")
    if not run.complete:
        say(console, "run incomplete: run.json holds what finished")
    say(console, f"run directory: {a.run_dir}")


def print_atlas(a: AtlasAnalysis, console: Console) -> None:
    """An atlas: per op and library the host time per call, the CPU time of all threads, the ratio to the op's
    fastest library and the layer that differs most from it; where each op's report is."""
    table = titled("atlas: host time per call at each op's host-bound size (pooled over the processes at the median "
                   "process's speed, 95% interval), the ratio to the op's fastest library (paired) and the layer that differs most from it")
    counted = any(c.counted for row in a.rows for c in row.cells.values())  # runs before counting: as they were
    cols = (("op", False), ("size", False), ("library", False), ("host / call", True), ("all threads / call", True),
            ("x fastest", True), ("layer that differs most", False)) + ((("kernels, API calls / call", False),)
                                                                       if counted else ())
    for col, right in cols:
        table.add_column(col, justify="right" if right else "left")
    for row in a.rows:
        if row.error and not row.cells:
            table.add_row(text(row.op), "-", "-", text(row.error), "", "", "", *([""] if counted else []))
            continue
        for i, (label, c) in enumerate(row.cells.items()):
            first = i == 0
            table.add_row(text(row.op if first else ""), text(fmt.shape(row.shape) if first else ""), text(label),
                          text(f"failed: {c.error}") if c.error else fmt.us(c.us) + (f" ({fmt.interval(c.interval)})"
                                                                                    if c.interval else ""),
                          fmt.us(c.all_threads_us), text(fmt.ratio_to_fastest(c.ratio, "" if c.error else row.fastest or "")),
                          text(fmt.differs_most(c)), *([text(c.counted or "-")] if counted else []))
    show(console, table)
    say(console, "host / call: the calling thread's clock around the loop (what a program waits for); all threads: "
                 "CPU time of every thread of the process during the loop, per call (a library's worker threads "
                 "included); layers: the calling thread's samples")
    for row in a.rows:
        if not row.error:
            say(console, f"{row.op}: each library against the first, layers and frames: {a.run_dir / row.report}")
    if not a.run.complete:
        say(console, "the atlas is incomplete (interrupted): the ops it did not finish are marked so")


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
    for r in rows:
        table.add_row(text(r.case), text(r.where), *([text(r.code)] if texts else []), r.self, r.total)
    show(console, table)
    say(console, lines_view.TERMINAL_KEY)


def print_aligned(a: Analysis, console: Console) -> None:
    """The step lines the cases share, a column group per case (render/aligned_lines.py), as much of it as fits
    the console (every figure; one count; total us and one count; without ±: it says which), then each pair's
    lines that differ most. Nothing for a run whose cases share no step line."""
    if a.aligned is None:
        return
    for fields, spread, left in aligned_lines.narrowed(a.aligned):
        for width in (32, 20, 12):  # the code cut shorter before a figure is left out
            got = aligned_lines.view(a.aligned, fields, spread, code_width=width, short=True)
            table = titled(got.title)
            table.add_column("line", justify="right")
            table.add_column("code", no_wrap=True)
            for g in got.groups:
                for h in g.headers:
                    table.add_column(Text(f"{fmt.visible(g.label)}\n{h}"), justify="right")
            for r in got.rows:
                table.add_row(text(r.line), text(r.code), *(text(c) for cells in r.cells for c in cells),
                              end_section=r.kind == "line" and r is got.rows[-2])
            if unwrapped(console, table):
                break
            boxless(table)  # as show() would draw it
            if unwrapped(console, table):
                break
        else:
            continue
        break
    show(console, table)
    say(console, aligned_lines.KEY.format(dash=fmt.DASH) + (f"; {left}{aligned_lines.WIDER}" if left else ""))
    for line in got.notes:
        say(console, line)
    for pair, sentences in aligned_lines.pair_sentences(a):
        say(console, f"{pair}, the lines that differ most:")
        for line in sentences:
            say(console, f"  {line}")


def unwrapped(console: Console, table: Table) -> bool:
    """Whether the table is drawn with no cell wrapped ('0.16 ±' over '0.16') at the console's width."""
    kept, table.min_width = table.min_width, None  # the width kept for a title (titled) may be wrapped
    try:
        return table.__rich_measure__(console, console.options.update_width(1 << 20)).maximum <= console.width
    finally:
        table.min_width = kept


def print_line_deltas(deltas: list, console: Console, base: str, head: str) -> None:
    """The source lines two cases differ most in (render/lines_view.py)."""
    rows = lines_view.delta_rows(deltas)
    if not rows:
        return
    table = titled(f"source lines that differ most ({fmt.visible(head)} - {fmt.visible(base)}), us per call")
    texts = any(r.code for r in rows)
    for col in ("line", *(["code"] if texts else []), f"{base} self", f"{head} self", "diff self", "diff total"):
        table.add_column(text(col), justify="left" if col in ("line", "code") else "right",
                         overflow="ellipsis" if col == "code" else "fold")
    for r in rows:
        table.add_row(text(r.where), *([text(r.code)] if texts else []), r.base_self, r.head_self, r.diff_self,
                      r.diff_total)
    show(console, table)
    say(console, lines_view.DELTA_KEY.format(head=fmt.visible(head), base=fmt.visible(base)))


def _text(options: Options, draw: Callable[[Console], None]) -> str:
    """What `draw` prints, as text: on a console of the options' width, in colour when asked."""
    buffer = io.StringIO()
    console = Console(file=buffer, width=options.width or 160, force_terminal=options.colour,
                      color_system="auto" if options.colour else None, soft_wrap=False)
    draw(console)
    return buffer.getvalue()


class TerminalCompare(Renderer[Analysis]):
    """What `flametool compare` prints at the end: the pairs, the timings, the layers and the frame deltas."""

    name, kind = "terminal", Analysis

    def render(self, result: Analysis) -> str:
        def draw(console: Console) -> None:
            print_summary(result, console)
            print_layers(result, console, view=self.options.view)
            print_lines(result, console)
            print_aligned(result, console)

        return _text(self.options, draw)


class TerminalSweep(Renderer[SweepAnalysis]):
    """What `flametool sweep` prints: its tables."""

    name, kind = "terminal", SweepAnalysis

    def render(self, result: SweepAnalysis) -> str:
        return _text(self.options, lambda console: print_sweep(result, console))


class TerminalAtlas(Renderer[AtlasAnalysis]):
    """What `flametool atlas` prints: the table of ops and libraries."""

    name, kind = "terminal", AtlasAnalysis

    def render(self, result: AtlasAnalysis) -> str:
        return _text(self.options, lambda console: print_atlas(result, console))


class TerminalDiff(Renderer[DiffResult]):
    """What `flametool diff` prints: layers and frames, head - base."""

    name, kind = "terminal", DiffResult

    def render(self, result: DiffResult) -> str:
        return _text(self.options, lambda console: print_run_diff(result, console, self.options.top,
                                                                  self.options.view))
