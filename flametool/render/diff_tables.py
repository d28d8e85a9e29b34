"""The tables of a difference: `flametool diff` (one case in two runs, or two cases of one run) and each compared
pair's frames and lines in `compare`'s output: layers, the frames and source lines that differ most, the counts."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from . import format as fmt, lines_view
from ..analyse import countdiff
from ..analyse.diff import DiffResult
from ..analyse.treediff import PairDiff
from .base import Renderer
from .terminal import console_text, fit_names, fold_paths, header, narrowest, say, show, text, titled


# One line under each table says what its columns are, in words a first reader knows.
def layer_key(view: str, together: bool = True) -> str:
    """The key under a layer table; `together`: the cases were timed in the same processes (not with --isolate)."""
    system = ("the C library, allocator and locks are counted in the layer that called them (--layers library "
              "lists them as a layer of their own)" if view == "caller"
              else "the C library, allocator and locks as a layer of their own")
    return (f"each case's time per call ({'timed together' if together else 'as timed'}) split by its share of py-spy samples in each layer; "
            + fmt.share_se("layer") + "; " + system + "; the layers' names (ATen glue, loop): "
            "docs/glossary.md")


FRAME_KEY = ("self: time in the frame's own code; total: with the frames it calls; diff: {head} minus {base} (+: "
             "{head} spends more), " + fmt.share_se("frame"))


def print_frame_deltas(case_diff: PairDiff, console: Console, top: int = 10) -> None:
    head, base = fmt.visible(case_diff.head), fmt.visible(case_diff.base)
    changed = [r for r in case_diff.frames if r.delta_us_per_call or r.delta_total_us_per_call]
    if not changed:
        say(console, ("no frame differs"))
        return

    def drawn(under: bool) -> Table:  # `under`: 'self' under each case's name, the figures' columns narrower
        table = titled(f"frames that differ most ({head} - {base}), us per call")
        table.add_column("frame", no_wrap=True)
        table.add_column("layer")
        for col in (header(base, "self", under), header(head, "self", under), header("diff", "self", under),
                    header("diff", "total", under)):
            table.add_column(col, justify="right", no_wrap=True)
        for r in changed[:top]:
            table.add_row(text((r.display)), r.layer_label or r.layer, fmt.num(r.base_self_us_per_call),
                          fmt.num(r.head_self_us_per_call),
                          fmt.pm(fmt.shown_delta(r.base_self_us_per_call, r.head_self_us_per_call), r.delta_se_us,
                                 sign=True),
                          fmt.signed(fmt.shown_delta(r.base_total_us_per_call, r.head_total_us_per_call)))
        return table

    # the headers on one line where the frames fit whole beside them, else folded so that the frames are cut less
    # (the headers were folded under 100 columns whatever the frames: at 100 five frames were cut that fitted)
    table = drawn(False)
    if narrowest(console, table) > console.width:
        table = drawn(True)
    fit_names(console, table, 0)
    if narrowest(console, table) > console.width:  # the frames at their shortest and still too wide (eight cases
        for column in table.columns[2:]:  # at 80: 81 columns, 84 in ASCII): a difference's error under it
            column.no_wrap = False  # ('+10.29' over '± 0.50'), the figures never parted otherwise (Phrased)
    show(console, table)
    say(console, FRAME_KEY.format(head=head, base=base) + (fmt.ROLE_KEY if any(r.role for r in changed) else ""))


def print_line_deltas(deltas: list, console: Console, base: str, head: str) -> None:
    """The source lines two cases differ most in (render/lines_view.py)."""
    rows = lines_view.delta_rows(deltas)
    if not rows:
        return
    table = titled(f"source lines that differ most ({fmt.visible(head)} - {fmt.visible(base)}), us per call")
    texts = any(r.code for r in rows)
    for col in (text("line"), *([text("code")] if texts else []), header(base, "self"), header(head, "self"),
                text("diff self"), text("diff total")):
        table.add_column(col, justify="left" if col.plain in ("line", "code") else "right",
                         overflow="ellipsis" if col.plain == "code" else "fold")
    for r in rows:
        table.add_row(text(r.where), *([text(r.code)] if texts else []), r.base_self, r.head_self, r.diff_self,
                      r.diff_total)
    fold_paths(console, table, 0)
    show(console, table)
    say(console, lines_view.DELTA_KEY.format(head=fmt.visible(head), base=fmt.visible(base)))


def print_count_diff(d: "countdiff.CountDiff | None", console: Console, notes: bool = True) -> None:
    """What a step does on each side, counted (exact), indented under the headline it belongs to."""
    for line, _ in (d.listed if notes else d.listed_bare) if d is not None else []:  # made by the analysis
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
        table.add_column(header(col) if i else text(col),
                         justify="left" if i == 0 else "right")
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


class TerminalDiff(Renderer[DiffResult]):
    """What `flametool diff` prints: layers and frames, head - base."""

    name, kind = "terminal", DiffResult

    def render(self, result: DiffResult) -> str:
        return console_text(self.options, lambda console: print_run_diff(result, console, self.options.top,
                                                                  self.options.view))
